"""Ingest: files (or documents built in code) to rows in the store, through ordered stages."""

from ragloom.ingest.pipeline import IngestPipeline
from ragloom.ingest.report import IngestReport, Progress
from ragloom.ingest.stages import Stage, default_stages
from ragloom.ingest.work import GraphChanges, IngestRun, Work

__all__ = ["GraphChanges", "IngestPipeline", "IngestReport", "IngestRun", "Progress", "Stage", "Work",
           "default_stages"]
