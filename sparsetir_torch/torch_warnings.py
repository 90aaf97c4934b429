"""torch's two sparse warnings, silenced where the library itself triggers them.

torch warns when a program first builds a sparse CSR/BSR tensor ("support is in
beta state") and when it builds any sparse tensor with invariant checks left at
their default ("implicitly disabled"). When the library builds one (a result of
st.sddmm, a conversion, a matrix read from a file), the user did not ask for
it, so the library silences exactly these two messages around exactly those
calls; a user's own sparse tensors still warn as torch decides.
"""
from __future__ import annotations

import contextlib
import warnings

_MESSAGES = (
    r"Sparse CSR tensor support is in beta state",
    r"Sparse invariant checks are implicitly disabled",
)


@contextlib.contextmanager
def quiet_sparse_warnings():
    """Silences torch's sparse beta and invariant-check warnings inside the block."""
    with warnings.catch_warnings():
        for message in _MESSAGES:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        yield
