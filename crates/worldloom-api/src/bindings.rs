//! TypeScript declarations of the API, generated with `ts-rs`.
//!
//! [`typescript`] returns the whole file `ui/src/bindings/api.ts`: one
//! `export type` per API type, the `Commands` table mapping each command
//! name to its `[request, response]` pair, and the constants the UI reads
//! (`JUDGE_DIMENSIONS`). The file is committed; the
//! `bindings` test fails when it differs from what this build generates.

use ts_rs::TS;

use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::types::*;

macro_rules! declarations {
    ($($t:ty),* $(,)?) => {
        vec![$( (<$t as TS>::name(), <$t as TS>::decl()) ),*]
    };
}

/// The path of the generated file, relative to the repository root.
pub const BINDINGS_PATH: &str = "ui/src/bindings/api.ts";

/// The generated TypeScript file.
pub fn typescript() -> String {
    let decls: Vec<(String, String)> = declarations![
        serde_json::Value,
        Domain,
        Representation,
        NodeId,
        BoundsAnomaly,
        BoundsPx,
        SourceSpan,
        TruncationReason,
        Truncation,
        NodeStates,
        Attribute,
        UiNode,
        UiTree,
        DiffStatus,
        FieldChange,
        TreeDiff,
        LineTag,
        LineOp,
        LineDiff,
        SideWarning,
        PaneSide,
        StatusCounts,
        TreeRow,
        TreeWindow,
        Landing,
        SideDocument,
        ComparedView,
        Metric,
        AnchorStatus,
        Anchor,
        JudgeScores,
        Fidelity,
        ObservationKind,
        ContextMode,
        OutputStatus,
        StopReason,
        PredictionSummary,
        ActionView,
        ActionFormat,
        PythonCall,
        AndroidTarget,
        ActionTarget,
        AndroidAction,
        ParsedAction,
        ObservationMeta,
        ScreenSize,
        ImageType,
        Screenshot,
        GetScreenshotRequest,
        ScreenshotData,
        SetScreenshotRequest,
        TrajectorySummary,
        BranchSummary,
        TreeNodeView,
        TreeEdgeView,
        TurnSummary,
        TurnDetail,
        WorkspaceInfoRequest,
        WorkspaceInfoResponse,
        TrajectorySort,
        ListTrajectoriesRequest,
        ListTrajectoriesResponse,
        GetTrajectoryRequest,
        GetTrajectoryResponse,
        GetBranchRequest,
        GetBranchResponse,
        GetTurnRequest,
        GetTreeRowsRequest,
        SearchTreeRequest,
        SearchTreeResponse,
        ListPredictionsRequest,
        ListPredictionsResponse,
        ChoosePredictionRequest,
        ChangeKind,
        StudioChangeKind,
        WorkspaceChangeKind,
        ChangeState,
        ChangeSummary,
        ChangeResponse,
        EmptyRequest,
        HistoryResponse,
        ImportFilesRequest,
        ImportedTrajectory,
        ImportFailure,
        ImportedRun,
        ImportFilesResponse,
        ExportFormat,
        ExportRequest,
        ExportResponse,
        AddNoteRequest,
        NoteView,
        ListNotesRequest,
        ListNotesResponse,
        SetTagRequest,
        LessonSummary,
        ListLessonsResponse,
        LessonRequest,
        LessonBranch,
        LessonView,
        AddToLessonRequest,
        SetCaptionRequest,
        ExportLessonRequest,
        ExportLessonResponse,
        ModelDtype,
        DraftMode,
        EngineSettings,
        KeySource,
        GenerationParamsView,
        EngineStatus,
        InspectModelDirRequest,
        SetEndpointKeyRequest,
        EndpointKeyStatusRequest,
        EndpointKeyStatus,
        DtypeMemory,
        ModelDirInfo,
        SetEngineRequest,
        ChatRole,
        ChatMessage,
        PreviewPromptRequest,
        PreviewPromptResponse,
        StepRequest,
        StepResponse,
        TokenView,
        StepStats,
        CancelStepRequest,
        CancelStepResponse,
        RolloutRequest,
        RolloutResponse,
        EditActionRequest,
        AppendTurnRequest,
        BranchCreated,
        ParseActionRequest,
        ParseActionResponse,
        ParamKind,
        ActionParam,
        ActionSpec,
        ActionFields,
        FieldProblem,
        ActionSpaceRequest,
        ActionSpaceResponse,
        FormatActionRequest,
        FormatActionResponse,
        ValidateObservationRequest,
        Severity,
        ValidationProblem,
        ValidationReport,
        AuthorObservationRequest,
        AuthorObservationResponse,
        SetPerturbationRequest,
        CompareBranchesRequest,
        CompareRow,
        CompareBranchesResponse,
        BranchRef,
        CurriculumFormat,
        ExportCurriculumRequest,
        ExportCurriculumResponse,
        RecordTrajectoryRequest,
        RecordTurnRequest,
        RecordedTurn,
        StepStatus,
        StudioEvent,
        ErrorCode,
        ApiError,
        ErrorBody,
        RunSummary,
        ListRunsResponse,
        RunRequest,
        DomainScores,
        MetricHistogram,
        StatusCount,
        RunDashboard,
        RunRowView,
        SearchIn,
        RunRowSort,
        ListRunRowsRequest,
        ListRunRowsResponse,
        CompareMetric,
        PairOutcome,
        CompareRunsRequest,
        RunPair,
        CompareCounts,
        ScatterPoint,
        CompareRunsResponse,
        SearchRunsRequest,
        SearchRunsResponse,
        SetRowLabelRequest,
        LabelSetResponse,
        SetLabelSetRequest,
        SetRowNoteRequest,
        RunDriftRequest,
        DriftPoint,
        DriftSeries,
        RunDriftResponse,
        ErrorKind,
        Finding,
        ActionKind,
        AtlasTable,
        AtlasCell,
        Atlas,
        AtlasDelta,
        RunAtlasRequest,
        BranchesAtlasRequest,
        RunAtlasResponse,
        AtlasRowsRequest,
        AtlasRowView,
        AtlasRowSide,
        AtlasRowsResponse,
        RowsExportFormat,
        ExportRunRowsRequest,
        ExportRunRowsResponse,
        RunInput,
        StartRunRequest,
        ResumeRunRequest,
        StartJudgeRequest,
        CancelRunJobRequest,
        RunJobKind,
        RunJobState,
        RunJobView,
        ResumableRun,
        ListRunJobsResponse,
    ];
    let mut out = String::new();
    out.push_str("// Generated by worldloom-api (crates/worldloom-api/src/bindings.rs) with ts-rs. Do not edit:\n");
    out.push_str("// regenerate with `WORLDLOOM_UPDATE_BINDINGS=1 cargo test -p worldloom-api --test bindings`.\n");
    out.push_str("/* eslint-disable */\n\n");
    for (_, decl) in &decls {
        out.push_str("export ");
        out.push_str(decl.trim());
        out.push_str("\n\n");
    }
    out.push_str("/** Every command: name → [request, response]. Transport: `POST /api/<name>` or a Tauri command. */\n");
    out.push_str("export interface Commands {\n");
    for (name, req, resp, doc) in crate::command_signatures() {
        out.push_str(&format!("  /** {doc} */\n  {name}: [{req}, {resp}];\n"));
    }
    out.push_str("}\n\n");
    out.push_str("/** A command name. */\nexport type CommandName = keyof Commands;\n");
    out.push_str("/** The request type of a command. */\nexport type RequestOf<C extends CommandName> = Commands[C][0];\n");
    out.push_str("/** The response type of a command. */\nexport type ResponseOf<C extends CommandName> = Commands[C][1];\n");
    out.push_str(&judge_dimensions());
    out
}

/// AgentWorldBench's judged dimensions as a TypeScript constant, from
/// `worldloom-core::judge::DIMENSIONS` (each is a field of `JudgeScores`;
/// the `satisfies` clause makes `tsc` check it).
fn judge_dimensions() -> String {
    let names: Vec<String> = worldloom_core::judge::DIMENSIONS
        .iter()
        .map(|d| format!("\"{d}\""))
        .collect();
    format!(
        "\n/** AgentWorldBench's judged dimensions, in the published order (`worldloom-core::judge::DIMENSIONS`). */\nexport const JUDGE_DIMENSIONS = [{}] as const satisfies readonly (keyof JudgeScores)[];\n",
        names.join(", ")
    )
}

/// Names referenced by a declaration that no declaration defines; used by the
/// bindings test to prove the file is self-contained. Comments and string
/// literals are skipped; a capitalised word not followed by `:` (a field
/// name) nor named by `type`, `interface` or `const` is a type reference.
pub fn undeclared_names(file: &str) -> Vec<String> {
    // Drop block and line comments.
    let mut code = String::new();
    let mut rest = file;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let declared: Vec<String> = code
        .split("export ")
        .filter_map(|d| {
            d.strip_prefix("type ")
                .or_else(|| d.strip_prefix("interface "))
        })
        .filter_map(|d| d.split(|c: char| !c.is_alphanumeric() && c != '_').next())
        .map(str::to_string)
        .collect();
    let builtin = ["Array", "Record", "C"];
    let mut missing = Vec::new();
    let mut word = String::new();
    let mut in_string = false;
    let mut after_keyword = false;
    for ch in code.chars().chain(std::iter::once(' ')) {
        if ch == '"' {
            in_string = !in_string;
            word.clear();
            continue;
        }
        if in_string {
            continue;
        }
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        if !word.is_empty() {
            let is_type = word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && ch != ':'
                && !after_keyword;
            if is_type
                && !declared.contains(&word)
                && !builtin.contains(&word.as_str())
                && !missing.contains(&word)
            {
                missing.push(word.clone());
            }
            after_keyword = word == "type" || word == "interface" || word == "const";
            word.clear();
        }
    }
    missing
}
