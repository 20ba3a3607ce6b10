//! Observation trees: one UI tree for every GUI representation, tree
//! alignment and diff, and simulation-fidelity metrics.
