"""``kernel``: numba's ``njit(cache=True)``, with a cache that loads without the compiler.

Every numba kernel of diffflow is declared with :func:`kernel`.  Importing this module imports
numba, so only the private kernel modules import it, and they are imported on first use.

Why not plain ``njit(cache=True)``: a fresh process with numba's on-disk cache filled still
paid ~0.35-0.5 s before its first kernel ran, and most of it was not loading kernels.
numba's ``Cache.load_overload`` first *refreshes* the target context, which imports every
lowering registry numba has (``numba.np.arraymath``, ``numba.typed``, ``numba.cpython.*``...,
~0.2 s; ``numba.np.arraymath`` imports ``scipy.linalg`` to probe for BLAS, another ~0.16-0.25
s), then installs them.  Those registries serve the compiler: linking a cached object file
needs numba's C helper symbols, registered when the target context is created, and its
runtime (NRT) functions, registered by ``rtsys.initialize``.  So :class:`QuickLoadCache`
initialises the runtime and loads; anything else (a cache miss compiles, and numba's
compiler refreshes the context itself) is numba's usual path.  The cache files are numba's
own (``__pycache__/*.nbi``, ``*.nbc``), written as numba writes them.

A cache entry is fresh while its source file's *content* is unchanged (a SHA-256 of the
file), not its modification time as in numba: so the cache stays valid when the package is
copied, unpacked or checked out elsewhere, which is how :mod:`diffflow.runtime.spark_pack`
ships compiled kernels to Spark executors.

The cache object is also built on first use rather than when the kernel is declared: numba's
builds a cache locator per function (a directory check and a temporary file in
``__pycache__``) although a query calls a handful of the kernels a module declares.

What the kernels may use: anything that needs symbols registered only by numba's lowering
registries (``hash()`` of strings, ``parallel=True``'s threading layer) would not link from
the cache without the refresh; diffflow's kernels use arrays, integers and numba's runtime
(``np.empty``).  ``tests/common/test_jit.py`` loads kernels in a fresh process and checks that
no registry was imported.
"""
from __future__ import annotations

import functools
import hashlib
import inspect

from numba import njit
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

__all__ = ["QuickLoadCache", "kernel", "load_cached", "source_stamp"]


class QuickLoadCache(FunctionCache):
    """numba's per-function disk cache, set up on first use, loading without a context refresh.

    Saving, the index and data files, and their freshness checks are numba's
    (:class:`numba.core.caching.FunctionCache`); only :meth:`load_overload` differs.
    """

    def __init__(self, py_func):  # numba's set-up waits for the first use (_setup)
        self._py_func = py_func
        self._ready = False

    def __repr__(self):
        return f"<QuickLoadCache py_func={self._py_func!r}>"

    def _setup(self) -> None:
        if not self._ready:
            super().__init__(self._py_func)  # the locator, the index file, enable()
            # fresh by content, not by modification time (see the module docstring)
            self._cache_file._source_stamp = source_stamp(inspect.getfile(self._py_func))
            self._ready = True

    @property
    def cache_path(self):
        """The folder of the cache files (numba's ``__pycache__`` beside the source)."""
        self._setup()
        return self._cache_path

    def load_overload(self, sig, target_context):
        """The cached compile result for ``sig``, or None; links it without refreshing the
        target context (see the module docstring), only initialising numba's runtime."""
        self._setup()
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def save_overload(self, sig, data):
        """Save a fresh compile result (numba's own code)."""
        self._setup()
        super().save_overload(sig, data)

    def flush(self):
        """Forget every cached compile result (numba's own code)."""
        self._setup()
        super().flush()


@functools.cache
def source_stamp(path: str) -> tuple:
    """What makes a cache entry of the kernels in ``path`` fresh: the file's SHA-256 and size.

    >>> source_stamp(__file__)[0]
    'sha256'
    """
    with open(path, "rb") as source:
        data = source.read()
    return "sha256", hashlib.sha256(data).hexdigest(), len(data)


def kernel(fn=None, **options):
    """Compile ``fn`` lazily with numba (``njit``), cached on disk through
    :class:`QuickLoadCache`; ``options`` are ``njit``'s (``inline="always"``...).

    Use as ``@kernel`` or ``@kernel(inline="always")``.
    """
    if fn is None:
        return lambda f: kernel(f, **options)
    dispatcher = njit(**options)(fn)
    dispatcher._cache = QuickLoadCache(fn)  # what Dispatcher.enable_caching() sets, lazily
    return dispatcher


def load_cached(module):
    """Load every compiled variant (overload) of ``module``'s kernels that numba's cache
    holds for this code and machine, without calling them; a generator that yields each
    kernel's name after loading its variants, so a caller can spread the work (~3-10 ms a
    variant) over idle moments.  A long-running process (a partition worker) calls it
    ahead of use, so no computation pays for the loading.

    The variants are those the cache index lists: every signature some earlier process
    compiled (the index key names the signature, the machine and the kernel's bytecode,
    so only entries this code can use are loaded).

    >>> import types
    >>> list(load_cached(types.ModuleType("no_kernels")))
    []
    """
    for name, dispatcher in list(vars(module).items()):
        cache = getattr(dispatcher, "_cache", None)
        if not isinstance(cache, QuickLoadCache) or \
                getattr(dispatcher, "__module__", None) != module.__name__:
            continue
        codegen = dispatcher.targetctx.codegen()
        cache._setup()
        for key in cache._cache_file._load_index():
            sig = key[0]
            if tuple(sig) not in dispatcher.overloads and \
                    key == cache._index_key(sig, codegen):
                dispatcher.compile(sig)  # (a cache hit: loaded, not compiled)
        yield name
