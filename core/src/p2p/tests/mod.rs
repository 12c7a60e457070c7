mod dispatch;
mod flow;
mod input;
mod lru;
