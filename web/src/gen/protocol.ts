// Generated from forge.wire.registry by `python -m forge.wire.schema`: do not edit.
// What the page sends (ClientMessage) and receives (ServerMessage) on the socket.

/** Frame 1 (G02): the fixed protocol number, the build, and the `[client]`/`[dictate]` keys. */
export interface ServerGreeting {
  kind: "greeting";
  version: number;
  forge_version: string;
  forge_version_short: string;
  settings: Record<string, unknown>;
}

/** Frame 2 (G06) and every applied reload: the effective-config document, no seat. */
export interface ServerSettings {
  kind: "settings";
  document: Record<string, unknown>;
}

/** The answer to `ping`, and nothing else (T12). */
export interface ServerPong {
  kind: "pong";
}

/** One seat: a label under a configured project of an org. */
export interface Seat {
  org: string;
  project: string;
  label: string;
}

/** The `session <org>/<project>/<label>` subject: `{"session": {org, project, label}}`. */
export interface SessionSubject {
  session: Seat;
}

/** A subject's whole state, as its subscriber draws it. */
export interface ServerSnapshot {
  kind: "snapshot";
  subject: "board" | "dictate_models" | "extensions" | "home" | "lab" | "usage" | SessionSubject;
  data: Record<string, unknown>;
}

/** One SessionUpdate. A seat's update carries its `seq` (S20); a keyless update has no `seq` key (S22, O-S7). */
export interface ServerUpdate {
  kind: "update";
  update: unknown;
  seq?: number | null;
  span: number;
}

/** One numbered frame of a seat, its update in the live update's shape. */
export interface SeatFrame {
  seq: number;
  update: unknown;
}

/** The answer to `seat_range` (S23). */
export interface ServerSeatFrames {
  kind: "seat_frames";
  slot: Seat;
  epoch: string;
  frames: SeatFrame[];
}

/** S18: what failed, why in one sentence, the seat it belongs to or null, dispatch_id null. */
export interface ServerError {
  kind: "error";
  what: string;
  why: string;
  seat: Seat | null;
  dispatch_id: null;
}

/** The answer to a verb sent with `reply_to` (O-S9), echoing it verbatim. */
export interface ServerReply {
  kind: "reply";
  reply_to: number | string;
  body: unknown;
}

/** The answer to `more`: an agent seat's turns before the cursor asked for, and the cursor for the page before them (null at the start); empty with a null cursor for a seat without a conversation (O-S11). */
export interface ServerPage {
  kind: "page";
  conversation: Seat;
  turns: unknown[];
  cursor: number | null;
}

/** A terminal's whole screen as a VT stream; chunks above `seq` follow (TM04). */
export interface ServerTerminalView {
  kind: "terminal_view";
  seat: Seat;
  id: number;
  cols: number;
  rows: number;
  seq: number;
  screen: string;
  viewers: number;
  viewer: number;
  controller: number | null;
}

/** Control moved: the controlling viewer's number, or null when nobody holds it. */
export interface ServerTerminalControl {
  kind: "terminal_control";
  seat: Seat;
  id: number;
  controller: number | null;
}

/** The JavaScript dialog holding a tab (O-BR14: alert, confirm, prompt or beforeunload). */
export interface Dialog {
  kind: string;
  message: string;
}

/** One tab as `browser_tabs` lists it (BR19, BR20). */
export interface TabRow {
  number: number;
  title: string;
  url: string;
  owner: Seat | null;
  opener: number | null;
  state: "idle";
  dialog: Dialog | null;
}

/** Pushed to every connection that asked `browser_tabs` for the profile, on any change. */
export interface ServerBrowserTabs {
  kind: "browser_tabs";
  profile: string;
  id: number;
  up: boolean;
  connected: boolean;
  closing_at_ms: number | null;
  audio_off: string | null;
  sandbox_off: string | null;
  rows: TabRow[];
}

/** BR07: the same truth about who drives, for every viewer of a tab. */
export interface ServerBrowserView {
  kind: "browser_view";
  id: number;
  profile: string;
  tab: number;
  controller: number | null;
  viewers: number;
  viewer: number;
}

/** BR16: where the tab's history sits (after an attach, a nav, the page's own move). */
export interface ServerBrowserNavState {
  kind: "browser_nav_state";
  id: number;
  tab: number;
  can_back: boolean;
  can_forward: boolean;
}

/** BR21: the tab's surface is gone (closed, its host or Chromium died); the viewer is detached. */
export interface ServerBrowserSurfaceFailed {
  kind: "browser_surface_failed";
  id: number;
  tab: number;
  reason: string;
}

/** BR18: a page asks for files; only the asking tab's controller hears it. */
export interface ServerBrowserFileDialog {
  kind: "browser_file_dialog";
  id: number;
  tab: number;
  multiple: boolean;
}

/** BR22, O-BR9: a finished download offered to the tab's controller, or (`dropped`) the notice that `lost` offers waited too long; the notice has no `tab`, an offer no `lost`. */
export interface ServerBrowserDownload {
  kind: "browser_download";
  tab?: number | null;
  name: string | null;
  data: string | null;
  error: string | null;
  dropped: boolean;
  lost?: number;
}

/** The three `[dictate]` axes a take was shaped by. */
export interface Axes {
  styling: string;
  structure: string;
  context: string;
}

/** The take is registered: its audio (kind 0) is read from the next frame on. */
export interface ServerDictateStarted {
  kind: "dictate_started";
  key: Seat;
  take: number;
  surface: string | null;
  options: Axes;
}

/** The microphone's level over the last 100 ms of the take's audio (RMS, full scale 1.0). */
export interface ServerDictateLevel {
  kind: "dictate_level";
  key: Seat;
  take: number;
  rms: number;
}

/** listening, speech, silence, transcribing or done. */
export interface ServerDictatePhase {
  kind: "dictate_phase";
  key: Seat;
  take: number;
  phase: string;
}

/** The words so far (shaped); each partial replaces the last. Nothing lands from one. */
export interface ServerDictatePartial {
  kind: "dictate_partial";
  key: Seat;
  take: number;
  text: string;
}

/** The take's words, for the box on `surface` that began it: this is what lands. */
export interface ServerDictateEnded {
  kind: "dictate_ended";
  key: Seat;
  take: number;
  surface: string | null;
  text: string;
  raw: string;
  options: Axes;
  audio_ms: number;
  segments: number;
  prompt: string | null;
}

/** The take ended without words: nothing lands. `cancelled` when this client asked. */
export interface ServerDictateFailed {
  kind: "dictate_failed";
  key: Seat;
  take: number;
  surface: string | null;
  why: string;
  cancelled: boolean;
}

/** How many connections have voice on for the seat. */
export interface ServerVoiceModeState {
  kind: "voice_mode_state";
  key: Seat;
  listeners: number;
}

/** One rendered clip of the seat's speech: mono i16 little-endian samples, base64. */
export interface ServerVoiceAudio {
  kind: "voice_audio";
  key: Seat;
  seq: number;
  sample_rate: number;
  pcm: string;
}

/** `{"other": "<extension>"}`: a kind this server does not know, the extension kept as is. */
export interface OtherKind {
  other: string;
}

export interface ServerDocumentRead {
  kind: "document_read";
  session: Seat;
  path: string;
  document_kind: "markdown" | "pdf" | "text" | OtherKind;
  bytes: string;
  reviewable: boolean;
  content_hash: string;
  threads: unknown[];
  reviews: unknown[];
}

export interface ListedDocument {
  path: string;
  document_kind: "markdown" | "pdf" | "text" | OtherKind;
  size: number;
}

export interface ServerDocumentList {
  kind: "document_list";
  session: Seat;
  asked: string | null;
  root: string;
  documents: ListedDocument[];
  truncated: boolean;
}

export interface ContentRead {
  state: "read";
  lines: string[];
  truncated: boolean;
}

export interface ContentFailed {
  state: "failed";
  why: string;
}

/** The ask's three names echoed as sent, and the read. */
export interface ServerFileContent {
  kind: "file_content";
  session: unknown;
  path: unknown;
  sha: unknown;
  content: ContentRead | ContentFailed;
}

/** The save was written; the reload push follows. `restart` lists the keys it changed whose class is `restart`: they are in the file and apply when `forge supervise` next starts. */
export interface ServerSettingsSaved {
  kind: "settings_saved";
  id: number | string;
  restart: string[];
  message: string | null;
}

/** Nothing was written: `stale` (the file moved), `invalid` (the loader's own message), `refused` (a guard, naming what it found) or `io` (the file could not be read or written). */
export interface ServerSettingsRefused {
  kind: "settings_refused";
  reason: "invalid" | "io" | "refused" | "stale";
  id: number | string;
  message: string;
  key_path: string | null;
}

/** A liveness probe; answered with `pong` and nothing else (T12). */
export interface ClientPing {
  kind: "ping";
}

export interface ClientSubscribe {
  kind: "subscribe";
  what: "board" | "dictate_models" | "extensions" | "home" | "lab" | "usage" | SessionSubject;
  answering?: boolean;
  review?: boolean;
}

export interface ClientUnsubscribe {
  kind: "unsubscribe";
  what: "board" | "dictate_models" | "extensions" | "home" | "lab" | "usage" | SessionSubject;
}

/** Which seat this connection has on screen; null (or absent) for none. */
export interface ClientShowing {
  kind: "showing";
  seat?: Seat | null;
}

export interface ClientSeatRange {
  kind: "seat_range";
  slot: Seat;
  epoch: string | null;
  from: number;
  to: number;
}

/** `command` is the core's Command enum, externally tagged: `{"name": {...}}` or `"name"`. */
export interface ClientCommand {
  kind: "command";
  command: string | Record<string, unknown>;
  reply_to?: number | string | null;
}

export interface ClientTerminalView {
  kind: "terminal_view";
  seat: Seat;
  id?: number | null;
  reply_to?: number | string | null;
}

export interface ClientTerminalDetach {
  kind: "terminal_detach";
}

export interface ClientTerminalResize {
  kind: "terminal_resize";
  seat: Seat;
  id: number;
  cols: number;
  rows: number;
}

export interface ClientTerminalPause {
  kind: "terminal_pause";
  paused: boolean;
}

/** The page has parsed the viewed terminal's chunks up to `seq`. A browser reads its socket as fast as bytes come, so only the page knows how far behind it is: while it controls, what it has been sent and not parsed paces the shell. */
export interface ClientTerminalAck {
  kind: "terminal_ack";
  seq: number;
}

export interface ClientTerminalControl {
  kind: "terminal_control";
  seat: Seat;
  id: number;
  take: boolean;
}

export interface ClientTerminalClose {
  kind: "terminal_close";
  seat: Seat;
  id: number;
}

export interface ClientBrowserView {
  kind: "browser_view";
  seat: Seat;
  tab?: number | null;
  reply_to?: number | string | null;
}

export interface ClientBrowserViewPage {
  kind: "browser_view_page";
  seat: Seat;
  target: string;
  reply_to?: number | string | null;
}

export interface ClientBrowserDetach {
  kind: "browser_detach";
}

export interface ClientBrowserResize {
  kind: "browser_resize";
  width: number;
  height: number;
  scale?: number;
}

export interface ClientBrowserInput {
  kind: "browser_input";
  seq: number;
  event: Record<string, unknown>;
}

export interface ClientBrowserControl {
  kind: "browser_control";
  take: boolean;
}

export interface ClientBrowserNav {
  kind: "browser_nav";
  back: boolean;
}

export interface FileUpload {
  name: string;
  data: string;
}

export interface ClientBrowserFileAnswer {
  kind: "browser_file_answer";
  id: number;
  files: FileUpload[];
}

export interface ClientBrowserTabs {
  kind: "browser_tabs";
  seat: Seat;
  reply_to?: number | string | null;
}

/** D5, our addition: open a URL in a new tab of the seat's browser. */
export interface ClientBrowserOpen {
  kind: "browser_open";
  seat: Seat;
  url: string;
  reply_to: number | string;
}

/** D5, our addition: navigate the viewed tab. */
export interface ClientBrowserNavigate {
  kind: "browser_navigate";
  url: string;
}

/** Our addition beside D5's: accept or dismiss the JavaScript dialog holding the viewed tab. */
export interface ClientBrowserDialogAnswer {
  kind: "browser_dialog_answer";
  accept: boolean;
  text?: unknown;
  reply_to?: number | string | null;
}

/** The axes the client's panel shows; an axis left out is forge.toml's `[dictate]` value. */
export interface DictateOptions {
  styling?: string | null;
  structure?: string | null;
  context?: string | null;
}

export interface ClientDictateStream {
  kind: "dictate_stream";
  key: Seat;
  options?: DictateOptions | null;
  surface?: string | null;
}

/** Capture ended: the open segment is decoded and the take's words land. */
export interface ClientDictateStop {
  kind: "dictate_stop";
  key: Seat;
  send?: boolean;
}

/** Drop the take: nothing lands. */
export interface ClientDictateCancel {
  kind: "dictate_cancel";
  key: Seat;
}

export interface ClientVoiceMode {
  kind: "voice_mode";
  key: Seat;
  on: boolean;
  explicit?: boolean;
}

export interface ClientVoicePreview {
  kind: "voice_preview";
  key: Seat;
  voice?: string | null;
}

/** Speak `text` on the seat's voice stream (`forge say`). */
export interface ClientVoiceSay {
  kind: "voice_say";
  key: Seat;
  text: string;
  voice?: string | null;
  reply_to?: number | string | null;
}

/** Run the local corpus through the models in use (`forge dictate bench`). */
export interface ClientDictateBench {
  kind: "dictate_bench";
  clips?: string[] | null;
  reply_to?: number | string | null;
}

/** Our addition: whether this connection hears the sound (kind 2) of the tabs it views. */
export interface ClientBrowserAudio {
  kind: "browser_audio";
  on: boolean;
  reply_to?: number | string | null;
}

export interface ClientMore {
  kind: "more";
  conversation: Seat;
  before?: unknown;
  turns?: number | null;
}

export interface ClientDocumentRead {
  kind: "document_read";
  session: Seat;
  path: string;
  reviewable?: boolean;
}

export interface ClientDocumentList {
  kind: "document_list";
  session: Seat;
  root?: string | null;
}

export interface ClientFileContent {
  kind: "file_content";
  session: unknown;
  path: unknown;
  sha?: unknown;
}

/** A web page's own perf records, as the page serialised them (written, never answered). */
export interface ClientClientPerf {
  kind: "client_perf";
  records?: unknown[];
}

export interface ClientSettingsEdit {
  kind: "settings_edit";
  id: number | string;
  fingerprint?: string | null;
  edits?: unknown[];
}

/** Run an approved cohort in the supervisor. Paths are absolute (the CLI resolves them once, in its own directory); `env` is the caller's environment, which the run reads as `forge evaluate` reads its own (the recipe's PATH, LANG and TMPDIR, the values redacted from output tails, the test hooks). */
export interface ClientLabStart {
  kind: "lab_start";
  cohort: string;
  source: string;
  out: string;
  approve: string;
  parallel?: number;
  keep_workspaces?: boolean;
  env?: Record<string, string>;
  reply_to?: number | string | null;
}

/** Stop run `run` as that signal stops `forge evaluate` (SIGINT: exit 130, SIGTERM: 143). */
export interface ClientLabStop {
  kind: "lab_stop";
  run: string;
  signal?: "SIGINT" | "SIGTERM";
  reply_to?: number | string | null;
}

/** The report.html of run `run`, once it ended. */
export interface ClientLabReport {
  kind: "lab_report";
  run: string;
  reply_to?: number | string | null;
}

/** `work{branch, changed, gate}`: the checked-out branch (null when detached or no repository), how many entries `git status` reports, and whether git runs here at all. */
export interface Work {
  branch: string | null;
  changed: number;
  gate: boolean;
}

/** One changed file; `added`/`removed` are null for a binary file or an untracked one (git counts no lines for either). */
export interface FileStat {
  path: string;
  old_path: string | null;
  status: "added" | "copied" | "deleted" | "modified" | "renamed" | "typechange" | "unmerged" | "untracked";
  added: number | null;
  removed: number | null;
}

/** Totals over every file of a range, and its busiest files (most lines moved first). */
export interface Stats {
  files: number;
  added: number;
  removed: number;
  busiest: FileStat[];
}

/** The uncommitted files (staged, unstaged, untracked), at most `WORKTREE_FILES_MAX`. */
export interface Worktree {
  files: FileStat[];
  truncated: boolean;
  stats: Stats;
}

export interface Commit {
  sha: string;
  subject: string;
  committed_at: number;
  stats: Stats;
}

/** The branch against `default_branch`: commits it has that the base lacks (newest first, at most `COMMITS_MAX`), how many the base has that it lacks, and the range's own stats. */
export interface Ahead {
  commit_count: number;
  behind: number;
  commits: Commit[];
  truncated: boolean;
  stats: Stats;
}

/** `git`: null layers are nothing to state (a clean tree, no base to measure against). */
export interface GitLayer {
  default_branch: string | null;
  worktree: Worktree | null;
  ahead: Ahead | null;
  base: "local" | "unverified" | null;
  base_error: string | null;
}

export interface Clean {
  state: "clean";
}

export interface Line {
  kind: "added" | "context" | "removed";
  text: string;
  old: number | null;
  new: number | null;
}

/** One `@@ -old_start,old_count +new_start,new_count @@ section` and the lines it carries. */
export interface Hunk {
  old_start: number;
  old_count: number;
  new_start: number;
  new_count: number;
  section: string;
  lines: Line[];
}

export interface DiffFile {
  path: string;
  old_path: string | null;
  status: "added" | "copied" | "deleted" | "modified" | "renamed" | "typechange" | "unmerged" | "untracked";
  binary: boolean;
  submodule: boolean;
  truncated: boolean;
  hunks: Hunk[];
}

export interface Capped {
  files: boolean;
  bytes: boolean;
}

export interface Populated {
  state: "populated";
  files: DiffFile[];
  files_total: number;
  capped: Capped;
}

export interface ScanFailed {
  state: "scan_failed";
  why: string;
}

/** `diff`: the worktree against HEAD (untracked files as added), and the branch against the merge base with `default_branch` (null when there is no base). */
export interface Diff {
  worktree: Clean | Populated | ScanFailed;
  branch_ahead: Clean | Populated | ScanFailed | null;
  base: "local" | "unverified" | null;
  base_error: string | null;
}

/** One terminal as its seat shows it; `reason` appears only once its host is gone. */
export interface TerminalSummary {
  id: number;
  shell: string;
  pid: number;
  cwd: string;
  cols: number;
  rows: number;
  alive: boolean;
  state: string;
  source: string;
  title: string;
  held: boolean;
  exit_status: number | null;
  reason?: string;
}

/** A person's prompt. The CLI does not echo a prompt, so the server forges this frame. */
export interface UserMessage {
  type: "user";
  uuid: string | null;
  text: string;
}

export interface TextBlock {
  type: "text";
  text: string;
}

export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
}

export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** Whole blocks of the model's message. */
export interface AssistantMessage {
  type: "assistant";
  message_id: string | null;
  blocks: (TextBlock | ThinkingBlock | ToolUseBlock)[];
}

export interface ToolResultMessage {
  type: "tool_result";
  tool_use_id: string;
  is_error: boolean;
  text: string;
}

/** A token append of the turn in flight (live only: a page carries the whole blocks). */
export interface DeltaMessage {
  type: "delta";
  kind: "text" | "thinking";
  index: number;
  text: string;
}

/** A turn's end as the CLI reports it (live only: the transcript keeps no result row). */
export interface ResultMessage {
  type: "result";
  subtype: string;
  is_error: boolean;
  text: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
}

/** One turn: a person's prompt and what the agent did with it (a session's first rows before any prompt form a turn of their own). */
export interface Turn {
  key: string | null;
  messages: (UserMessage | AssistantMessage | ToolResultMessage | DeltaMessage | ResultMessage)[];
}

export interface ContextCategory {
  name: string;
  tokens: number;
}

/** What the session's context holds (the CLI's `/context`). */
export interface ContextUsage {
  total_tokens: number;
  max_tokens: number;
  percentage: number;
  model: string;
  categories: ContextCategory[];
}

/** The header fields an agent seat fills (the rest keep their session snapshot values). */
export interface AgentHeader {
  model: string | null;
  effort: string | null;
  permission_mode: string | null;
  context_usage: ContextUsage | null;
  turn_in_flight: boolean;
  agent_session_id: string | null;
}

/** A `state.queue` row: a prompt waiting for the turn ahead of it. */
export interface QueuedPrompt {
  uuid: string;
  source: string;
  text: string;
}

export interface PermissionCard {
  kind: "permission";
  id: string;
  tool_name: string;
  input: Record<string, unknown>;
  title: string | null;
  decision_reason: string | null;
}

export interface QuestionOption {
  label: string;
  description: string;
}

export interface Question {
  question: string;
  header: string;
  options: QuestionOption[];
  multi_select: boolean;
}

export interface QuestionCard {
  kind: "question";
  id: string;
  questions: Question[];
}

/** Every message the page may send. */
export type ClientMessage =
  | ClientPing
  | ClientSubscribe
  | ClientUnsubscribe
  | ClientShowing
  | ClientSeatRange
  | ClientCommand
  | ClientTerminalView
  | ClientTerminalDetach
  | ClientTerminalResize
  | ClientTerminalPause
  | ClientTerminalAck
  | ClientTerminalControl
  | ClientTerminalClose
  | ClientBrowserView
  | ClientBrowserViewPage
  | ClientBrowserDetach
  | ClientBrowserResize
  | ClientBrowserInput
  | ClientBrowserControl
  | ClientBrowserNav
  | ClientBrowserFileAnswer
  | ClientBrowserTabs
  | ClientBrowserOpen
  | ClientBrowserNavigate
  | ClientBrowserDialogAnswer
  | ClientDictateStream
  | ClientDictateStop
  | ClientDictateCancel
  | ClientVoiceMode
  | ClientVoicePreview
  | ClientVoiceSay
  | ClientDictateBench
  | ClientBrowserAudio
  | ClientMore
  | ClientDocumentRead
  | ClientDocumentList
  | ClientFileContent
  | ClientClientPerf
  | ClientSettingsEdit
  | ClientLabStart
  | ClientLabStop
  | ClientLabReport;

/** Every message the page may receive. */
export type ServerMessage =
  | ServerGreeting
  | ServerSettings
  | ServerPong
  | ServerSnapshot
  | ServerUpdate
  | ServerSeatFrames
  | ServerError
  | ServerReply
  | ServerPage
  | ServerTerminalView
  | ServerTerminalControl
  | ServerBrowserTabs
  | ServerBrowserView
  | ServerBrowserNavState
  | ServerBrowserSurfaceFailed
  | ServerBrowserFileDialog
  | ServerBrowserDownload
  | ServerDictateStarted
  | ServerDictateLevel
  | ServerDictatePhase
  | ServerDictatePartial
  | ServerDictateEnded
  | ServerDictateFailed
  | ServerVoiceModeState
  | ServerVoiceAudio
  | ServerDocumentRead
  | ServerDocumentList
  | ServerFileContent
  | ServerSettingsSaved
  | ServerSettingsRefused;
