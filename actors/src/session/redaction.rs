//! Stored text through the store's redactor (`crate::redact`): a new
//! node, a patch of the open turn's node, a queued message and a title
//! are redacted before anything of them is logged or written.

use serde_json::{Map, Value};

use super::core::SessionCore;
use super::error::SessionError;
use super::wire::{NewNode, NodePatch};
use crate::meta::SessionMeta;
use crate::redact::{RedactError, Redaction, METADATA_KEY};
use crate::store::Store;

impl From<RedactError> for SessionError {
    fn from(e: RedactError) -> Self {
        match e {
            RedactError::Refused { kind, field } => SessionError::Secret { kind, field },
            other => SessionError::Invalid(other.to_string()),
        }
    }
}

/// Redact `content`, `output` and `metadata` (its redactions record
/// aside) with the policy of the session `meta` describes; what was found.
fn redact_parts(
    store: &Store,
    meta: &SessionMeta,
    content: Option<&mut Value>,
    output: Option<&mut Value>,
    metadata: Option<&mut Map<String, Value>>,
) -> Result<Vec<Redaction>, SessionError> {
    let mut out = Vec::new();
    let Some(r) = store.redactor() else {
        return Ok(out);
    };
    let home = meta.project_home.as_ref().map(|h| h.path.as_path());
    let policy = r.policy(&meta.project_id, home);
    if let Some(v) = content {
        r.redact_value(&policy, v, "/content", &mut out)?;
    }
    if let Some(v) = output {
        r.redact_value(&policy, v, "/output", &mut out)?;
    }
    if let Some(m) = metadata {
        for (k, v) in m.iter_mut().filter(|(k, _)| k.as_str() != METADATA_KEY) {
            let key = k.replace('~', "~0").replace('/', "~1");
            r.redact_value(&policy, v, &format!("/metadata/{key}"), &mut out)?;
        }
    }
    Ok(out)
}

/// The title of a session being made, redacted.
pub(super) fn redact_new_title(store: &Store, meta: &mut SessionMeta) -> Result<(), SessionError> {
    let mut title = Value::String(std::mem::take(&mut meta.title));
    let found = redact_parts(store, meta, Some(&mut title), None, None);
    meta.title = match title {
        Value::String(s) => s,
        _ => String::new(),
    };
    found.map(|_| ())
}

impl SessionCore {
    /// A node about to be stored, redacted; its metadata lists what was.
    pub(super) fn redact_new(&self, new: &mut NewNode) -> Result<(), SessionError> {
        let found = redact_parts(
            &self.store,
            &self.meta,
            Some(&mut new.content),
            new.output.as_mut(),
            Some(&mut new.metadata),
        )?;
        if !found.is_empty() {
            new.metadata.insert(
                METADATA_KEY.into(),
                serde_json::to_value(&found).unwrap_or_default(),
            );
        }
        Ok(())
    }

    /// A patch about to be applied, redacted. Returns the redactions of
    /// the fields it replaces, with the prefixes of those fields (whose
    /// earlier redactions no longer hold).
    pub(super) fn redact_patch(
        &self,
        patch: &mut NodePatch,
    ) -> Result<(Vec<Redaction>, Vec<String>), SessionError> {
        let mut replaced = Vec::new();
        if patch.content.is_some() {
            replaced.push("/content".to_string());
        }
        if patch.output.is_some() {
            replaced.push("/output".to_string());
        }
        if let Some(m) = &patch.metadata {
            replaced.extend(
                m.keys()
                    .map(|k| format!("/metadata/{}", k.replace('~', "~0").replace('/', "~1"))),
            );
        }
        let found = redact_parts(
            &self.store,
            &self.meta,
            patch.content.as_mut(),
            patch.output.as_mut(),
            patch.metadata.as_mut(),
        )?;
        if let Some(m) = patch.metadata.as_mut() {
            // A client does not write the record of redactions.
            m.remove(METADATA_KEY);
        }
        Ok((found, replaced))
    }

    /// A title about to be stored, redacted.
    pub(super) fn redact_title(&self, title: &mut String) -> Result<(), SessionError> {
        let mut v = Value::String(std::mem::take(title));
        let found = redact_parts(&self.store, &self.meta, Some(&mut v), None, None);
        *title = match v {
            Value::String(s) => s,
            _ => String::new(),
        };
        found.map(|_| ())
    }
}

/// A node's record of redactions after a patch: those of the fields the
/// patch replaced go, the patch's own come in.
pub(super) fn merge_redactions(
    metadata: &mut Map<String, Value>,
    found: Vec<Redaction>,
    replaced: &[String],
) {
    let mut kept: Vec<Redaction> = metadata
        .get(METADATA_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if found.is_empty() && kept.is_empty() {
        return;
    }
    kept.retain(|r| {
        !replaced
            .iter()
            .any(|p| r.field == *p || r.field.starts_with(&format!("{p}/")))
    });
    kept.extend(found);
    if kept.is_empty() {
        metadata.remove(METADATA_KEY);
    } else {
        metadata.insert(
            METADATA_KEY.into(),
            serde_json::to_value(&kept).unwrap_or_default(),
        );
    }
}
