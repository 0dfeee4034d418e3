// A diff as the server capped it: each file's hunks, line by line, and every cap said in words.

import type { DiffFile, DiffLayer, Hunk } from "./gitwire";
import { STATUS_LETTER } from "./gitwire";

/** Why a layer shows fewer files or lines than changed, in words; null when nothing was cut. */
export function layerCaps(layer: DiffLayer): string[] {
  if (layer.state !== "populated") return [];
  const words: string[] = [];
  if (layer.capped.files) {
    words.push(
      `${layer.files_total} files changed; the diff carries the first 100 (the list above counts them all).`,
    );
  }
  if (layer.capped.bytes) {
    words.push("The diff stops at 512 KiB of changed lines: the files after that point are not shown.");
  }
  return words;
}

export function LayerNotes({ layer }: { layer: DiffLayer }) {
  if (layer.state === "scan_failed") {
    return (
      <p class="capnote bad" role="alert">
        git could not read this diff: {layer.why}
      </p>
    );
  }
  return (
    <>
      {layerCaps(layer).map((words) => (
        <p class="capnote" key={words} data-cap>
          {words}
        </p>
      ))}
    </>
  );
}

export function FileDiff({ file }: { file: DiffFile }) {
  return (
    <section class="filediff" data-diff-file={file.path} aria-label={`diff of ${file.path}`}>
      <header>
        <span class={`status status-${file.status}`} title={file.status}>
          {STATUS_LETTER[file.status]}
        </span>
        <span class="diffpath">
          {file.old_path ? `${file.old_path} → ` : ""}
          {file.path}
        </span>
      </header>
      {file.binary ? <p class="capnote">A binary file: git shows no lines for it.</p> : null}
      {file.submodule ? <p class="capnote">A submodule: its own commits moved, not lines here.</p> : null}
      {!file.binary && !file.submodule && file.hunks.length === 0 ? (
        <p class="capnote">No line changed (a mode or an empty file).</p>
      ) : null}
      <div class="hunks">
        {file.hunks.map((hunk, index) => (
          <HunkView hunk={hunk} key={index} />
        ))}
      </div>
      {file.truncated ? (
        <p class="capnote" data-cap>
          This file's diff is cut at 400 lines or 32 KiB: the rest of its changes are not shown.
        </p>
      ) : null}
    </section>
  );
}

const SIGN = { context: " ", added: "+", removed: "−" } as const;

function HunkView({ hunk }: { hunk: Hunk }) {
  return (
    <div class="hunk">
      <div class="hunkhead">
        @@ −{hunk.old_start},{hunk.old_count} +{hunk.new_start},{hunk.new_count} @@ {hunk.section}
      </div>
      {hunk.lines.map((line, index) => (
        <div class={`dl dl-${line.kind}`} key={index} data-line={line.kind}>
          <span class="ln">{line.old ?? ""}</span>
          <span class="ln">{line.new ?? ""}</span>
          <span class="sign">{SIGN[line.kind]}</span>
          <span class="tx">{line.text}</span>
        </div>
      ))}
    </div>
  );
}
