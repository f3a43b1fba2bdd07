//! What the operator reads and does: [`operations`] (`/healthz`, `/readyz`, `/metrics`, `/status`),
//! [`admin`] (`ADMIN_TOKEN`'s actions on breakers and keys), [`ui`] (the operator's page, `/ui`,
//! with the recent searches the kit lists) and [`state_file`] (`STATE_DIR`, read at start and kept
//! written).

pub(crate) mod admin;
pub(crate) mod operations;
pub(crate) mod state_file;
pub(crate) mod ui;
