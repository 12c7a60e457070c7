mod dispatch;
mod flow;
mod input;
mod lru;
mod tracker;
