//! What a turn of a project-bound session asks of its project: the working
//! tree's state when the turn opens (the baseline), and at its end the
//! agent's commit or the reason it was skipped. Called by the session
//! actor; every git step runs in the project's actor.

use actix::prelude::*;

use super::actor::{CommitTurn, Status};
use super::registry::Lookup;
use super::{ProjectError, ProjectRegistry};
use crate::git::AgentCommit;
use crate::meta::{ProjectBaseline, ProjectOutcome};

fn not_clean(reason: String) -> ProjectBaseline {
    ProjectBaseline {
        clean: false,
        dirty_paths: Vec::new(),
        reason: Some(reason),
    }
}

fn skipped(reason: String, dirty_paths: Vec<String>) -> ProjectOutcome {
    ProjectOutcome::Skipped {
        reason,
        dirty_paths,
    }
}

/// The bound project's working tree now, as a turn baseline.
pub async fn baseline(projects: Addr<ProjectRegistry>, project_id: String) -> ProjectBaseline {
    let actor = match projects.send(Lookup(project_id)).await {
        Ok(Ok((_, actor))) => actor,
        Ok(Err(e)) => return not_clean(format!("project unavailable: {e}")),
        Err(_) => return not_clean("project service unavailable".into()),
    };
    match actor.send(Status).await {
        Ok(Ok(state)) if state.is_clean() => ProjectBaseline {
            clean: true,
            dirty_paths: Vec::new(),
            reason: None,
        },
        Ok(Ok(state)) => ProjectBaseline {
            clean: false,
            reason: Some(
                state
                    .busy
                    .unwrap_or_else(|| "you had uncommitted changes when the turn began".into()),
            ),
            dirty_paths: state.dirty,
        },
        Ok(Err(e @ ProjectError::PathMissing(_))) => not_clean(e.to_string()),
        Ok(Err(e)) => not_clean(format!("project status failed: {e}")),
        Err(_) => not_clean("project service unavailable".into()),
    }
}

/// What the project does at the end of a turn, given its baseline: the
/// agent's changes are committed only when the tree was clean at the start.
/// Without a project service (an engine embedded without projects) the
/// commit is skipped.
pub async fn outcome(
    projects: Option<Addr<ProjectRegistry>>,
    commit: CommitTurn,
    project_id: String,
    baseline: ProjectBaseline,
) -> ProjectOutcome {
    if !baseline.clean {
        return skipped(
            baseline
                .reason
                .unwrap_or_else(|| "the working tree was not clean".into()),
            baseline.dirty_paths,
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
    match actor.send(commit).await {
        Ok(Ok(AgentCommit::Committed(oid))) => ProjectOutcome::Committed {
            commit: oid.to_string(),
        },
        Ok(Ok(AgentCommit::NoChanges)) => ProjectOutcome::NoChanges,
        Ok(Ok(AgentCommit::Refused(reason))) => skipped(reason, Vec::new()),
        Ok(Err(e)) => skipped(format!("project commit failed: {e}"), Vec::new()),
        Err(_) => skipped("project service unavailable".into(), Vec::new()),
    }
}
