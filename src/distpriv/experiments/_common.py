"""Former home of the output helpers, now :mod:`distpriv.formatting` (names re-exported for old imports)."""

from ..formatting import (  # noqa: F401
    FORMATS,
    check_flag,
    check_format,
    dumps,
    markdown_table,
    parse_positive_list,
    prepare_out,
    progress,
    to_jsonable,
)
