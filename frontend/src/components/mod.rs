//! The page's panes, one per file, and the splitters between them.

pub mod cost;
pub mod decisions;
pub mod diff;
pub mod graph;
pub mod kernels;
pub mod lab;
pub mod node_details;
pub mod pass_list;
pub mod run;
pub mod splitter;
