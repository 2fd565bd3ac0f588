"""The tidy predictions table, the interchange format of tempcore: its columns declared once
(:mod:`.schema`), the table and its import into a store (:mod:`.table`), its file formats
(:mod:`.formats`) and its validation (:mod:`.validation`).

The table's public names load on first use: ``from tempcore.tidy import read_predictions``.
"""

from tempcore.registry import lazy_exports

_EXPORTS = {
    name: "table"
    for name in (
        "FORMATS", "REQUIRED_COLUMNS", "PredictionsTableError", "file_sha256", "fingerprint_conflicts",
        "import_table", "infer_format", "iter_prediction_batches", "predictions_table",
        "read_predictions", "store_predictions", "table_to_predictions", "tidy_columns",
        "validate_table", "write_batches", "write_table",
    )
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
