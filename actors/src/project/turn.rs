//! What a turn of a project-bound session asks of its project: the working
//! tree's state when the turn opens (the baseline), and at its end the
//! agent's commit or the reason it was skipped. Called by the session
//! actor; every git step runs in the project's actor.

use actix::prelude::*;

use super::actor::{Baseline, ClaimFiles, CommitTurn};
use super::agent_turn::TurnEnd;
use super::registry::Lookup;
use super::{ProjectError, ProjectRegistry};
use crate::meta::{ProjectBaseline, ProjectOutcome};

fn not_clean(reason: String) -> ProjectBaseline {
    ProjectBaseline::unknown(reason)
}

fn skipped(reason: String, dirty_paths: Vec<String>) -> ProjectOutcome {
    ProjectOutcome::Skipped {
        reason,
        dirty_paths,
        held: None,
    }
}

/// The bound project's working tree now, as a turn baseline.
pub async fn baseline(projects: Addr<ProjectRegistry>, project_id: String) -> ProjectBaseline {
    let actor = match projects.send(Lookup(project_id)).await {
        Ok(Ok((_, actor))) => actor,
        Ok(Err(e)) => return not_clean(format!("project unavailable: {e}")),
        Err(_) => return not_clean("project service unavailable".into()),
    };
    match actor.send(Baseline).await {
        Ok(Ok(baseline)) => baseline,
        Ok(Err(e @ ProjectError::PathMissing(_))) => not_clean(e.to_string()),
        Ok(Err(e)) => not_clean(format!("project status failed: {e}")),
        Err(_) => not_clean("project service unavailable".into()),
    }
}

/// Files an open turn names while it runs (see `ClaimFiles`).
pub async fn claim(projects: Addr<ProjectRegistry>, project_id: String, claim: ClaimFiles) {
    if let Ok(Ok((_, actor))) = projects.send(Lookup(project_id)).await {
        actor.do_send(claim);
    }
}

/// What the project does at the end of a turn, given its baseline: the
/// agent's changes are committed when the tree was clean at the start,
/// held under the session's private ref when it was not. Without a
/// project service (an engine embedded without projects) nothing is done.
pub async fn outcome(
    projects: Option<Addr<ProjectRegistry>>,
    end: TurnEnd,
    project_id: String,
) -> ProjectOutcome {
    let unknown = end.baseline.tree.is_none() && !end.baseline.clean;
    if unknown {
        return skipped(
            end.baseline
                .reason
                .clone()
                .unwrap_or_else(|| "the working tree was not clean".into()),
            end.baseline.dirty_paths.clone(),
        );
    }
    let Some(projects) = projects else {
        return skipped(format!("project {project_id} is not available"), Vec::new());
    };
    let actor = match projects.send(Lookup(project_id)).await {
        Ok(Ok((_, actor))) => actor,
        Ok(Err(e)) => return skipped(format!("project unavailable: {e}"), Vec::new()),
        Err(_) => return skipped("project service unavailable".into(), Vec::new()),
    };
    match actor.send(CommitTurn(end)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => skipped(format!("project commit failed: {e}"), Vec::new()),
        Err(_) => skipped("project service unavailable".into(), Vec::new()),
    }
}
