// Drives context-mode's own ContentStore for benchmarks/versus.py.
//
// Usage: node reference_driver.mjs STORE_JS DB [--build]
//   STORE_JS  the package's build/store.js (context-mode installed from npm)
//   DB        a store file (ContentStore opens it read-write and sets WAL)
//
// --build: read one JSON line from stdin, [[label, path], ...], index each
// file through ContentStore.index({path, source: label}) (file-backed, as
// ctx_index path=... records it; the reference merges its FTS5 indexes every
// 50 inserts), close the store (which merges them again and checkpoints) and
// print {"built": files, "chunks": total, "ms": <wall clock of the whole build>}.
//
// Otherwise (one JSON object per line): it prints {"ready": true, "sqlite": "3.53.2", "node": "v20..."}
// once, then for every request line {"query": "...", "limit": 3, "source": null,
// "contentType": null, "sourceMatchMode": "like"} it prints
// {"ms": <wall-clock ms of searchWithFallback>, "rows": [[source, title, matchLayer], ...]}.
// A failing search prints {"error": "<message>"}. Nothing here is timed but the call itself.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [storeJs, dbPath, mode] = process.argv.slice(2);
if (!storeJs || !dbPath) {
  process.stderr.write("usage: node reference_driver.mjs STORE_JS DB [--build]\n");
  process.exit(2);
}
const { ContentStore } = await import(pathToFileURL(storeJs).href);
const lines = createInterface({ input: process.stdin });

if (mode === "--build") {
  let files = [];
  for await (const line of lines) {
    if (line.trim()) {
      files = JSON.parse(line);
      break;
    }
  }
  const t0 = process.hrtime.bigint();
  const store = new ContentStore(dbPath);
  let chunks = 0;
  for (const [label, path] of files) {
    chunks += store.index({ path, source: label }).totalChunks;
  }
  store.close();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stdout.write(JSON.stringify({ built: files.length, chunks, ms }) + "\n");
  process.exit(0);
}

const store = new ContentStore(dbPath);
let sqlite = "?";
try {
  const { loadDatabase } = await import(new URL("db-base.js", pathToFileURL(storeJs)).href);
  const Database = loadDatabase();
  const probe = new Database(":memory:");
  sqlite = probe.prepare("select sqlite_version() as v").get().v;
  probe.close();
} catch {
  // the version is informative only
}
process.stdout.write(JSON.stringify({ ready: true, sqlite, node: process.version }) + "\n");

for await (const line of lines) {
  if (!line.trim()) continue;
  let out;
  try {
    const req = JSON.parse(line);
    const t0 = process.hrtime.bigint();
    const rows = store.searchWithFallback(
      req.query,
      req.limit ?? 3,
      req.source ?? undefined,
      req.contentType ?? undefined,
      req.sourceMatchMode ?? "like",
    );
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    out = { ms, rows: rows.map((r) => [r.source, r.title, r.matchLayer]) };
  } catch (err) {
    out = { error: err instanceof Error ? err.message : String(err) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
