//! Tests of the model, the replications, the eviction rules, virtual losses and the
//! simulator.

mod allocation;
mod coordinator;
mod eviction;
mod model;
mod sim;
mod system;
mod virtual_loss;
