mod reproduce;
