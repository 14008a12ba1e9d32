"""Predictions before measuring: the chunk-cache model per cell and per request class, the time calibration,
and :mod:`ccp.predict.explain`, the one "why is this slow" every command renders."""

from ccp.predict.calibration import Calibration, calibrate, calibration_dict, calibration_dir, calibration_for
from ccp.predict.cells import (
    PREDICTED,
    ChunkIndex,
    predict_cell,
    predict_job,
    predict_requests,
    source_index,
    stored_chunk_sizes,
    summarise_predictions,
)
from ccp.predict.explain import cause, chunk_traps, traps

__all__ = ["PREDICTED", "Calibration", "ChunkIndex", "calibrate", "calibration_dict", "calibration_dir", "calibration_for",
           "cause", "chunk_traps", "predict_cell", "predict_job", "predict_requests", "source_index", "stored_chunk_sizes",
           "summarise_predictions", "traps"]
