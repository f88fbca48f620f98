"""Ingest: upload files or name a path, choose the lens, watch it run; delete documents or lenses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from ragloom.engine import Engine, IngestReport
from ragloom.errors import RagloomError
from ragloom.ingest.uploads import UploadName, ingest_uploads, upload_folder, upload_names
from ragloom.load import validate_name
from ragloom.ui.common import Runtime, busy_note, confirm, engine, ensure_app, fail, header, job_panel, runtime
from ragloom.ui.helpers import file_name, md_escape
from ragloom.ui.jobs import Job, JobProgress

NEW_LENS = "New lens…"
STATUS = {"added": "added", "updated": "updated", "unchanged": "unchanged", "failed": "FAILED"}

ensure_app()
rt = runtime()
header("Ingest", "Add documents under a lens: the perspective they speak from. Unchanged files are skipped; "
                 "changed ones become new versions (the old ones stay queryable).")
eng = engine()


def lens_options(eng: Engine, tenant: str) -> list[str]:
    try:
        present = eng.store.lenses(tenant)
    except RagloomError:
        present = set()
    configured = list(eng.settings.retrieval.lenses)
    return [*configured, *sorted(present - set(configured))]


def start(rt: Runtime, eng: Engine, paths: list[Path], *, lens: str, tenant: str, sync: bool, what: str) -> Job:
    def work(job: Job) -> IngestReport:
        return eng.ingest(paths, lens=lens, tenant=tenant, sync=sync, progress=JobProgress(job))

    return rt.jobs.submit("ingest", f"Ingesting {what} into {lens}", work, writes=True,
                          params={"lens": lens, "tenant": tenant, "paths": [str(p) for p in paths]})


def start_uploads(rt: Runtime, eng: Engine, files: list[tuple[str, bytes]], *, lens: str, tenant: str,
                  refused: list[str]) -> Job:
    """Store the uploads under ``uploads/<tenant>/<lens>/`` and ingest them, in the job (writers take
    turns, so two sessions never write the same file at once); then remove the file of every
    upload the ingest refused, so that a refused file (a zip bomb, say) does not stay on disk."""
    folder = upload_folder(rt.workspace, lens, tenant)

    def work(job: Job) -> IngestReport:
        return ingest_uploads(eng, files, lens=lens, tenant=tenant, progress=JobProgress(job))

    what = f"{len(files)} uploaded file{'s' if len(files) != 1 else ''}"
    return rt.jobs.submit("ingest", f"Ingesting {what} into {lens}", work, writes=True,
                          params={"lens": lens, "tenant": tenant, "paths": [str(folder / n) for n, _ in files],
                                  "refused": refused})


def upload_notes(workspace: Path, lens: str, tenant: str, files: list[Any], names: list[UploadName]) -> None:
    """Before ingesting: the uploads refused for their names, the ones stored under another name,
    and the ones that replace an earlier upload of the lens (a new version of that document)."""
    for n in names:
        if n.refused:
            st.error(n.refused, icon=":material/block:")
    renamed = [n for n in names if n.renamed]
    if renamed:
        st.caption("Files with the same name are all kept: the later ones as "
                   + ", ".join(f"{md_escape(n.name)}" for n in renamed) + ".")
    try:
        folder = upload_folder(workspace, validate_name("lens", lens), validate_name("tenant", tenant))
    except RagloomError:
        return  # a lens name still being typed: said when Ingest is pressed
    replaced = [n.name for n, f in zip(names, files, strict=True) if n.name and is_replaced(folder / n.name, f)]
    if replaced:
        st.info(f"Already uploaded to {md_escape(lens)}: {', '.join(md_escape(r) for r in replaced)}. Ingesting makes "
                f"{'this file its' if len(replaced) == 1 else 'each file its document’s'} new version (the earlier one "
                "stays readable as of its date); if it is another document, rename the file first.",
                icon=":material/update:")


def is_replaced(path: Path, upload: Any) -> bool:  # noqa: ANN401 - Streamlit's UploadedFile
    """Whether ``upload`` would replace another file at ``path``."""
    try:
        return path.is_file() and (path.stat().st_size != upload.size or path.read_bytes() != upload.getvalue())
    except OSError:
        return False


def show_report(job: Job) -> None:
    report: IngestReport = job.result
    lens = job.params.get("lens", "")
    refused: list[str] = job.params.get("refused", [])
    uploaded = "refused" in job.params
    line = f"Into **{lens}**: {report.summary()}"
    if refused:
        line += (" 1 upload refused for its name." if len(refused) == 1
                 else f" {len(refused)} uploads refused for their name.")
    with st.container(border=True):
        trouble = bool(report.failed or refused)
        icon = ":material/warning:" if trouble else ":material/check_circle:"
        (st.warning if trouble else st.success)(line, icon=icon)
        for message in refused:
            st.error(f"✗ {message}")
        for _, message in report.failed:
            st.error(f"✗ {message}")
        if uploaded and any(not source.startswith("<") for source, _ in report.failed):
            st.caption(f"Refused uploads are not kept: their files were removed from uploads/{lens}/ (an earlier "
                       "upload of the same name is back as it was).")
        c1, c2, c3 = st.columns(3)
        c1.metric("Files", report.files)
        c2.metric("Chunks written", report.chunks_written)
        c3.metric("Graph relations found", report.relationships,
                  help="Context-graph edges added or recomputed for the documents that changed.")
        if report.documents:
            st.dataframe(
                [{"file": file_name(d["source"]), "status": STATUS.get(d["status"], d["status"]),
                  "chunks": d["chunks"], "written": d["written"], "message": d["message"],
                  "path": d["source"]} for d in report.documents],
                hide_index=True, width="stretch",
                column_config={"message": st.column_config.TextColumn(width="large")})


# -- the form ----------------------------------------------------------------------------------

tenant_default = eng.settings.tenant
left, right = st.columns([3, 2], gap="large")
with right:
    st.markdown("**Where it goes**")
    tenant = st.text_input("Tenant", value=tenant_default, key="ingest-tenant", help="Workspaces can hold several tenants; "
                           "every read is scoped to one.").strip() or tenant_default
    options = lens_options(eng, tenant)
    choice = st.selectbox("Lens", [*options, NEW_LENS], key="ingest-lens",
                          help="Existing lenses, the configured ones (Settings), or a new one.")
    lens = st.text_input("New lens name", key="ingest-new-lens", placeholder="for example customer-interviews").strip() \
        if choice == NEW_LENS else choice

with left:
    st.markdown("**What to read**")
    source = st.radio("Source", ["Upload files", "A folder or file on this computer"], horizontal=True,
                      label_visibility="collapsed", key="ingest-source")
    uploads: list[Any] = []
    path_text = ""
    sync = False
    if source == "Upload files":
        nonce = st.session_state.setdefault("upload-nonce", 0)
        uploads = list(st.file_uploader(
            "Files", accept_multiple_files=True, key=f"uploads-{nonce}",
            help="Markdown, text, HTML, PDF or Word files. They are kept in the workspace under uploads/<lens>/; "
                 "a file named like an earlier upload of the lens becomes that document's new version.")
            or [])
    else:
        path_text = st.text_input("Path", key="ingest-path", placeholder="examples/materials/engineering",
                                  help=f"A folder (read recursively) or a file; relative paths start at {Path.cwd()}.")
        sync = st.checkbox("Mark documents of this lens whose files are gone as deleted (sync)", key="ingest-sync",
                           help="Only for folders: their history is kept.")

    names = upload_names([f.name for f in uploads])
    if uploads:
        upload_notes(rt.workspace, lens, tenant, uploads, names)

busy = busy_note(rt)
accepted = [(n.name, f) for n, f in zip(names, uploads, strict=True) if n.name]
ready = bool(lens) and (bool(accepted) if source == "Upload files" else bool(path_text.strip()))
if st.button("Ingest", type="primary", disabled=not ready or busy is not None, key="ingest-go"):
    try:
        lens = validate_name("lens", lens)
        tenant = validate_name("tenant", tenant)
        if source == "Upload files":
            start_uploads(rt, eng, [(name, f.getvalue()) for name, f in accepted], lens=lens, tenant=tenant,
                          refused=[n.refused for n in names if n.refused])
            st.session_state["upload-nonce"] = st.session_state.get("upload-nonce", 0) + 1
        else:
            path = Path(path_text.strip()).expanduser()
            start(rt, eng, [path if path.is_absolute() else Path.cwd() / path], lens=lens, tenant=tenant, sync=sync,
                  what=file_name(path_text.strip().rstrip("/")) or path_text)
        st.rerun()
    except RagloomError as exc:
        fail(exc)

job_panel(rt, "ingest", render_result=show_report)

# -- managing what is there --------------------------------------------------------------------

st.divider()
st.subheader("Documents in the workspace")
if flash := st.session_state.pop("ingest-flash", None):
    st.toast(flash, icon=":material/delete:")
    st.success(flash)
if error := st.session_state.pop("ingest-flash-error", None):
    st.error(f"error: {error}")
try:
    documents = eng.store.documents(tenant)
except RagloomError as exc:
    fail(exc)
    st.stop()
if not documents:
    st.caption(f"No documents for tenant {tenant} yet.")
    st.stop()

st.dataframe(
    [{"lens": d["lens"], "file": file_name(d["source_path"]), "title": d.get("title") or "",
      "chunks": d.get("chunk_count"), "version": d.get("version_sequence"),
      "date": str(d["document_date"]) if d.get("document_date") else "", "path": d["source_path"]} for d in documents],
    hide_index=True, width="stretch", height=min(38 + 35 * len(documents), 360))

doc_col, lens_col = st.columns(2, gap="large")
with doc_col:
    st.markdown("**Delete a document**")
    st.caption("It disappears from answers; its earlier versions stay readable as of a past date.")
    labels = {d["document_id"]: f"{d['lens']} · {file_name(d['source_path'])}" for d in documents}
    doc_id = st.selectbox("Document to delete", list(labels), format_func=labels.__getitem__, key="delete-doc",
                          label_visibility="collapsed")

    def delete_document() -> None:
        try:
            removed = eng.delete(doc_id, tenant=tenant)
            st.session_state["ingest-flash"] = f"Deleted {labels[doc_id]} ({removed} document)."
        except RagloomError as exc:
            st.session_state["ingest-flash-error"] = str(exc)
        st.rerun()

    if busy is None and doc_id:
        confirm(f"doc-{doc_id}", f"Delete **{labels[doc_id]}** from tenant {tenant}?", delete_document,
                label="Delete")

with lens_col:
    st.markdown("**Delete a lens**")
    st.caption("Removes every document of the lens, with all their versions. This cannot be undone.")
    present = sorted({d["lens"] for d in documents})
    gone = st.selectbox("Lens to delete", present, key="delete-lens", label_visibility="collapsed")

    def delete_lens() -> None:
        try:
            removed = eng.clear(lens=gone, tenant=tenant)
            st.session_state["ingest-flash"] = f"Deleted the lens {gone}: {removed} documents removed."
        except RagloomError as exc:
            st.session_state["ingest-flash-error"] = str(exc)
        st.rerun()

    if busy is None and gone:
        confirm(f"lens-{gone}", f"Delete the lens **{gone}** and all its documents, with their history?",
                delete_lens, label="Delete lens")

