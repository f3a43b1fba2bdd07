//! End users behind a client's key: the people of an Open WebUI that calls the gateway with one
//! key and names each user in a header (`X-OpenWebUI-User-Id`, `-Email`, `-Name`, `-Role`). When
//! the operator trusts those headers (`OPENWEBUI_USER_HEADER_TRUST`), each user is a *sub-client*
//! of the key: its own rate limit and premium budget (`OPENWEBUI_USER_*`, by default the key's
//! own), with the key's limits still holding for all its users together.
//!
//! A sub-client is named `<client>/<user>`, `<user>` being the user's ID when it is a plain token
//! (Open WebUI's IDs are UUIDs) and otherwise a short SHA-256 fingerprint (`u-…`) of the ID or the
//! email — so an email never becomes a metric label or a log field. At most
//! [`MAX_PER_CLIENT`] users per client get names of their own; the rest share `<client>/other`,
//! so a client that sends made-up users cannot grow the label set or the state without bound.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use super::ClientName;

/// Whether the end-user headers a client sends (Open WebUI's `X-OpenWebUI-User-*`) are believed:
/// only when the operator says the gateway sits behind the Open WebUI that sets them
/// (`OPENWEBUI_USER_HEADER_TRUST`), since anyone could send them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndUserHeaders {
    /// Each named user is a sub-client of the key's client.
    Trusted,
    /// The headers are ignored.
    Ignored,
}

/// Users with names of their own, per client.
pub(crate) const MAX_PER_CLIENT: usize = 256;

/// The longest user ID taken as a name (longer ones are fingerprinted).
const MAX_ID_LEN: usize = 64;

/// One end user as a trusted door names it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct EndUser {
    /// The user's ID in the caller's system.
    pub(crate) id: Option<String>,
    /// The user's email (fingerprinted when it is what names the user; never shown).
    pub(crate) email: Option<String>,
    /// The user's display name (shown in `/admin/status` only).
    pub(crate) name: Option<String>,
    /// The user's role (`user`, `admin`, …).
    pub(crate) role: Option<String>,
}

impl EndUser {
    /// A user named by an ID or an email; `None` when neither is given.
    pub(crate) fn new(
        id: Option<&str>,
        email: Option<&str>,
        name: Option<&str>,
        role: Option<&str>,
    ) -> Option<Self> {
        let clean = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| v.chars().take(200).collect::<String>())
        };
        let user = Self {
            id: clean(id),
            email: clean(email),
            name: clean(name),
            role: clean(role),
        };
        (user.id.is_some() || user.email.is_some()).then_some(user)
    }

    /// The user's part of the sub-client's name: the ID when it is a plain token, else a
    /// fingerprint of the ID or the email.
    pub(crate) fn label(&self) -> String {
        if let Some(id) = &self.id {
            let plain = id.len() <= MAX_ID_LEN
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if plain && id != OTHER {
                return id.clone();
            }
        }
        let named_by = self.id.as_deref().or(self.email.as_deref()).unwrap_or("");
        let digest = Sha256::digest(named_by.as_bytes());
        format!("u-{}", hex::encode(&digest[..6]))
    }
}

/// The label of every user past [`MAX_PER_CLIENT`].
const OTHER: &str = "other";

/// What `/admin/status` shows of a user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Seen {
    /// The user's label (its ID, or a fingerprint).
    pub(crate) user: String,
    /// The display name last seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// The role last seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<String>,
}

/// The users each client has named so far.
#[derive(Debug, Default)]
pub(crate) struct EndUsers {
    seen: Mutex<HashMap<ClientName, BTreeMap<String, Seen>>>,
}

impl EndUsers {
    /// The sub-client `user` of `parent` is counted as: its own name, or `<parent>/other` once
    /// the parent has [`MAX_PER_CLIENT`] users.
    pub(crate) fn name_for(&self, parent: &ClientName, user: &EndUser) -> ClientName {
        let label = user.label();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let users = seen.entry(parent.clone()).or_default();
        let label = if users.contains_key(&label) || users.len() < MAX_PER_CLIENT {
            users.insert(
                label.clone(),
                Seen {
                    user: label.clone(),
                    name: user.name.clone(),
                    role: user.role.clone(),
                },
            );
            label
        } else {
            OTHER.to_owned()
        };
        ClientName::new(&format!("{}/{label}", parent.as_str()))
    }

    /// Every user seen, with the client it belongs to and its sub-client name.
    pub(crate) fn list(&self) -> Vec<(ClientName, ClientName, Seen)> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let mut list = Vec::new();
        for (parent, users) in seen.iter() {
            for (label, user) in users {
                let name = ClientName::new(&format!("{}/{label}", parent.as_str()));
                list.push((parent.clone(), name, user.clone()));
            }
        }
        list.sort_by(|a, b| a.1.cmp(&b.1));
        list
    }

    /// Forgets the users of clients no longer configured (after a reload).
    pub(crate) fn retain(&self, keep: impl Fn(&ClientName) -> bool) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|parent, _| keep(parent));
    }
}

/// The client a sub-client's name belongs to (`alice` of `alice/u1`): client names never hold a
/// `/` (`API_KEYS_FILE` takes `A-Z a-z 0-9 . _ -`).
pub(crate) fn parent_of(name: &ClientName) -> Option<&str> {
    name.as_str().split_once('/').map(|(parent, _)| parent)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_named_by_a_plain_id_or_else_by_a_fingerprint_never_an_email() {
        let by_id = EndUser::new(Some(" 7f3a-42 "), Some("ada@example.org"), None, None).unwrap();
        assert_eq!(by_id.label(), "7f3a-42");
        let by_email = EndUser::new(None, Some("ada@example.org"), Some("Ada"), None).unwrap();
        let label = by_email.label();
        assert!(label.starts_with("u-") && label.len() == 14, "{label}");
        assert!(!label.contains("ada"));
        let odd_id = EndUser::new(Some("ada@example.org"), None, None, None).unwrap();
        assert!(odd_id.label().starts_with("u-"));
        assert_eq!(
            EndUser::new(Some("other"), None, None, None)
                .unwrap()
                .label()
                .len(),
            14,
            "a user called other is not the overflow"
        );
        assert_eq!(EndUser::new(Some(" "), None, Some("Ada"), None), None);
    }

    #[test]
    fn each_client_names_at_most_its_share_of_users_and_the_rest_share_one() {
        let users = EndUsers::default();
        let alice = ClientName::new("alice");
        let user = |i: usize| EndUser::new(Some(&format!("user-{i}")), None, None, None).unwrap();
        for i in 0..MAX_PER_CLIENT {
            assert_eq!(
                users.name_for(&alice, &user(i)).as_str(),
                format!("alice/user-{i}")
            );
        }
        assert_eq!(
            users.name_for(&alice, &user(MAX_PER_CLIENT)).as_str(),
            "alice/other"
        );
        assert_eq!(
            users.name_for(&alice, &user(3)).as_str(),
            "alice/user-3",
            "a known user keeps its name"
        );
        let bob = ClientName::new("bob");
        assert_eq!(users.name_for(&bob, &user(999)).as_str(), "bob/user-999");
        assert_eq!(users.list().len(), MAX_PER_CLIENT + 1);
        users.retain(|parent| parent.as_str() == "bob");
        assert_eq!(users.list().len(), 1);
        assert_eq!(parent_of(&ClientName::new("bob/user-999")), Some("bob"));
        assert_eq!(parent_of(&ClientName::new("bob")), None);
    }
}
