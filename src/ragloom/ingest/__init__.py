"""Ingest: files (or documents built in code) to rows in the store, through ordered stages."""

from typing import TYPE_CHECKING

from ragloom.exports import lazy

if TYPE_CHECKING:
    from ragloom.ingest.pipeline import IngestPipeline
    from ragloom.ingest.report import IngestReport, Progress
    from ragloom.ingest.stages import Stage, default_stages
    from ragloom.ingest.work import GraphChanges, IngestRun, Work

__all__ = ["GraphChanges", "IngestPipeline", "IngestReport", "IngestRun", "Progress", "Stage", "Work",
           "default_stages"]

__getattr__, __dir__ = lazy(globals(), {
    "ragloom.ingest.pipeline": ("IngestPipeline",),
    "ragloom.ingest.report": ("IngestReport", "Progress"),
    "ragloom.ingest.stages": ("Stage", "default_stages"),
    "ragloom.ingest.work": ("GraphChanges", "IngestRun", "Work"),
})
