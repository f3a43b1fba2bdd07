//! What the operator reads and does: [`operations`] (`/healthz`, `/readyz`, `/metrics`, `/status`),
//! [`capabilities`] (`/v1/capabilities`, what a client may ask of this gateway),
//! [`admin`] (`ADMIN_TOKEN`'s actions on breakers and keys), [`ui`] (the operator's page, `/ui`,
//! with the recent searches the kit lists) and [`state_file`] (`STATE_DIR`, read at start and kept
//! written).

pub(crate) mod admin;
pub(crate) mod capabilities;
pub(crate) mod operations;
pub(crate) mod state_file;
pub(crate) mod ui;
