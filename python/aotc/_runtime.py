"""Running a model library built by aotc from Python: aotc.load, Model, TensorSpec.

    m = aotc.load("model.so", threads=4)
    y = m(x)                       # numpy in -> numpy out, torch in -> torch out
    y1, y2 = m(ids=ids, mask=mask) # by name; several outputs come back as a tuple

The library is opened with ctypes.CDLL, which releases the GIL during every foreign call,
so Python threads that share one Model run in parallel. Each Python thread gets its own
aotc context (arena and worker threads, aotc.h's rule of one context per runner thread),
created on its first call; the model (the weights) is shared.

Why the call path looks the way it does: a small model runs in a few microseconds, so the
Python side must cost about as little. Everything that does not depend on the call's
tensors is done once: the ctypes prototypes are set at load, each context keeps its
aotc_tensor arrays filled in (dtype, rank, dims, size, memory kind: a model's shapes are
fixed), and a call only checks each input against its spec, writes the data pointers,
allocates the outputs and calls aotc_run.

Dynamic dims (aotc --dim B=1..8, ABI minor version 4): a spec's shape names such a dim
("B") in place of its size, and Model.dims gives each name's range. A call checks the
inputs' shapes against the ranges (a name is one size in every input), asks the library
for the outputs' shapes (aotc_model_output_dims) and allocates them at those shapes. Both
are cached per distinct tuple of input shapes, so a call at shapes already seen only writes
the dims and sizes (when they differ from the context's last run) besides the pointers.

Copies: a C-contiguous input of the right dtype (numpy array or CPU tensor; CUDA tensor
for a CUDA model) is passed by pointer, never copied. A non-contiguous input (a slice, a
transpose) or a numpy array in non-native byte order is copied to a dense one first.
Outputs are new arrays or tensors on every call, written in place by aotc_run.

CUDA libraries (aotc --target cuda) take CUDA torch tensors of the device that was current
when the model was loaded. A run is enqueued on torch's current stream of that device (set
as the context's stream before the run), so it is ordered with torch's work before and
after it and the call returns without waiting for the GPU, like any torch operation.
"""
import atexit
import ctypes
import errno
import os
import sys
import tempfile
import threading
import weakref
from typing import NamedTuple, Tuple, Union

import numpy as np

from ._errors import AotcError

__all__ = ["load", "Model", "TensorSpec", "DimRange"]

ABI_VERSION = 1

_DTYPE_NAMES = {1: "float32", 2: "float16", 3: "bfloat16", 4: "int64", 5: "int32", 6: "bool"}
_DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}
# numpy has no bfloat16: such tensors are uint16 arrays holding the raw bits (as aotc-run's
# .npy files do). An ml_dtypes bfloat16 array is accepted as an input too.
_NUMPY_DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
                 "bfloat16": np.dtype(np.uint16), "int64": np.dtype(np.int64),
                 "int32": np.dtype(np.int32), "bool": np.dtype(np.bool_)}
_MEMORY_HOST = 0
_MEMORY_DEVICE = 1
_CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy
_WEIGHTS_EXTERNAL = 1
_DEVICE_CUDA = 1
_MAX_RANK = 8


class TensorSpec(NamedTuple):
    """One input or output of a model: its name, dtype ("float32", "float16", "bfloat16",
    "int64", "int32" or "bool") and shape (a tuple of ints; () for a scalar).

    In a model compiled with dynamic dims (aotc --dim), a dim that varies is its name
    instead of an int: ("B", "S") for an input ids:BxS, and for an output the size it has
    in the named dims, e.g. ("B", "S", 64) or ("B*S", 64). Model.dims gives each name's
    range. A static model's shapes are all ints."""
    name: str
    dtype: str
    shape: Tuple[Union[int, str], ...]

    @property
    def dynamic(self):
        """True when a dim of the shape varies between runs (is a name, not an int)."""
        return any(type(d) is str for d in self.shape)


class DimRange(tuple):
    """The sizes a named dim takes: a (min, max) tuple, both included, with the attributes
    min, max and multiple_of (1, or the step a size must be a multiple of, which some ops
    of the model need, e.g. a reshape that splits the dim in two)."""

    def __new__(cls, min, max, multiple_of=1):
        self = super().__new__(cls, (min, max))
        self.multiple_of = multiple_of
        return self

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]

    def __repr__(self):
        if self.multiple_of == 1:
            return f"({self[0]}, {self[1]})"
        return f"DimRange(min={self[0]}, max={self[1]}, multiple_of={self.multiple_of})"

    def __reduce__(self):
        return (DimRange, (self[0], self[1], self.multiple_of))

    def describe(self):
        """'1..8', or '2..64 (multiples of 2)'."""
        return f"{self[0]}..{self[1]}" + (f" (multiples of {self.multiple_of})" if self.multiple_of > 1 else "")


# ---- the C ABI's structs (aotc.h; the sizes are checked below) ----

class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_void_p), ("size_bytes", ctypes.c_uint64), ("memory", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 3)]


class _DimLimit(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("max", ctypes.c_int64), ("reserved", ctypes.c_uint64 * 2)]


class _ContextOptions(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("cuda_graph_cache", ctypes.c_int32),
                ("num_dim_limits", ctypes.c_int32), ("reserved_i", ctypes.c_int32 * 1),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_uint64),
                ("cuda_stream", ctypes.c_void_p), ("dim_limits", ctypes.c_void_p)]


class _WeightsInfo(ctypes.Structure):
    _fields_ = [("location", ctypes.c_int32), ("alignment", ctypes.c_uint32),
                ("size_bytes", ctypes.c_uint64), ("checksum", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class _ModelOptions(ctypes.Structure):
    _fields_ = [("weights_path", ctypes.c_char_p), ("weights_data", ctypes.c_void_p),
                ("weights_size", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 5)]


class _DimRange(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64),
                ("multiple_of", ctypes.c_int64), ("reserved", ctypes.c_uint64 * 4)]


assert ctypes.sizeof(_Tensor) == 64 and ctypes.sizeof(_ContextOptions) == 48
assert ctypes.sizeof(_ModelOptions) == 64 and ctypes.sizeof(_TensorInfo) == 64
assert ctypes.sizeof(_DimRange) == 64 and ctypes.sizeof(_DimLimit) == 32
# A call writes input i's data pointer as word _WORDS_PER_TENSOR * i of the context's
# aotc_tensor array seen as 64-bit words (data is a tensor's first field); a model with
# dynamic dims also its size_bytes, word _SIZE_WORD after it.
_WORDS_PER_TENSOR = ctypes.sizeof(_Tensor) // 8
_SIZE_WORD = _Tensor.size_bytes.offset // 8
# Input shapes -> output shapes (and byte sizes) of a model with dynamic dims: at most this
# many distinct input shapes are remembered (then the cache starts again).
_MAX_PLANS = 1024

_p = ctypes.c_void_p
_status = ctypes.c_int
# name -> (restype, argtypes, required)
_PROTOTYPES = {
    "aotc_last_error": (ctypes.c_char_p, [], True),
    "aotc_status_name": (ctypes.c_char_p, [_status], True),
    "aotc_model_create": (_status, [_p], True),
    "aotc_model_destroy": (_status, [_p], True),
    "aotc_model_num_inputs": (_status, [_p, _p], True),
    "aotc_model_num_outputs": (_status, [_p, _p], True),
    "aotc_model_input_info": (_status, [_p, ctypes.c_size_t, _p], True),
    "aotc_model_output_info": (_status, [_p, ctypes.c_size_t, _p], True),
    "aotc_context_create": (_status, [_p, _p, _p], True),
    "aotc_context_destroy": (_status, [_p], True),
    "aotc_run": (_status, [_p, _p, _p, ctypes.c_size_t, _p, ctypes.c_size_t], True),
    # minor version 1
    "aotc_model_create_v2": (_status, [_p, _p], False),
    "aotc_model_weights_info": (_status, [_p], False),
    # minor version 2
    "aotc_model_device": (_status, [_p], False),
    "aotc_context_set_cuda_stream": (_status, [_p, _p], False),
    # minor version 3
    "aotc_compiler_version": (ctypes.c_char_p, [], False),
    # minor version 4: dynamic dims
    "aotc_model_input_dim_range": (_status, [_p, ctypes.c_size_t, ctypes.c_int32, _p], False),
    "aotc_model_output_dim_range": (_status, [_p, ctypes.c_size_t, ctypes.c_int32, _p], False),
    "aotc_model_output_dims": (_status, [_p, _p, ctypes.c_size_t, ctypes.c_size_t, _p], False),
    # minor version 6: contexts for smaller largest sizes
    "aotc_model_arena_requirements_v2": (_status, [_p, _p, _p, _p], False),
}


class _Library:
    """The ABI functions of one loaded library, prototypes set once."""

    def __init__(self, cdll):
        self.cdll = cdll
        for name, (restype, argtypes, required) in _PROTOTYPES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                if required:
                    raise
                fn = None
            else:
                fn.restype = restype
                fn.argtypes = argtypes
            setattr(self, name[len("aotc_"):], fn)

    def error(self, status, call=None):
        """The AotcError for a failed call: the status's name and the library's message."""
        name = self.status_name(status).decode("utf-8", "replace")
        message = self.last_error().decode("utf-8", "replace")
        if not message:
            message = f"{call} failed" if call else "the call failed"
        return AotcError(name, message)

    def check(self, status, call):
        if status:
            raise self.error(status, call)


# The identity (device, inode) of the file each path was loaded from: the dynamic loader
# hands back the library already loaded under the same name even if the file has been
# replaced since (a rebuilt model), so a changed file is opened under a fresh name.
_loaded_files = {}
_loaded_lock = threading.Lock()


def _open_library(path):
    st = os.stat(path)
    identity = (st.st_dev, st.st_ino)
    with _loaded_lock:
        earlier = _loaded_files.get(path)
        if earlier is None or earlier == identity:
            cdll = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            _loaded_files[path] = identity
            return cdll
        # The loader matches names before files: a symlink of a new name reaches the new file.
        # (The mapping keeps the file's inode, so it cannot be reused while loaded.)
        with tempfile.TemporaryDirectory(prefix="aotc-load-") as tmp:
            link = os.path.join(tmp, os.path.basename(path))
            os.symlink(path, link)
            return ctypes.CDLL(link, mode=os.RTLD_NOW | os.RTLD_LOCAL)


def _open_after_torch(path, message):
    """A CUDA model needs cuBLAS and the CUDA runtime, which torch's wheels bring and load at
    import: if those are what is missing, import torch (which such a model needs anyway)
    and try again. None when that does not apply or does not help."""
    if "cannot open shared object file" not in message or "libcu" not in message or "torch" in sys.modules:
        return None
    try:
        import torch  # noqa: F401
        return _open_library(path)
    except (ImportError, OSError):
        return None


def _load_hint(message):
    if "cannot open shared object file" in message:
        return (" (a library it needs is missing; a CUDA model needs the CUDA libraries that torch's "
                "wheels bring: import torch first, or put them on LD_LIBRARY_PATH)")
    return " (not a shared library for this machine?)"


def _default_weights_path(path):
    """MODEL.weights for MODEL.so (else PATH.weights), where aotc --weights file puts them."""
    return path[:-3] + ".weights" if path.endswith(".so") and len(os.path.basename(path)) > 3 \
        else path + ".weights"


def _closed_error(path, why):
    return AotcError("AOTC_ERR_INVALID_ARGUMENT", f"model '{path}' {why}")


class _Slot:
    """One aotc context, owned by the model's _State. lock is held during each run on the
    context and while destroying it, so a context is never destroyed mid-run."""
    __slots__ = ("handle", "lock")

    def __init__(self, handle):
        self.handle = handle
        self.lock = threading.Lock()


class _State:
    """What must be released when a Model goes: the library, the model and every context,
    including those of threads that have ended. Holds no reference to the Model, so that
    the Model can be garbage collected."""

    def __init__(self, lib, path):
        self.lib = lib
        self.path = path
        self.model = None       # the aotc_model*, as an int
        self.slots = set()      # live contexts
        self.orphans = []       # contexts of ended threads that drop() could not destroy at once
        self.lock = threading.RLock()
        self.closed_why = None  # None while usable, else the end of "model 'PATH' ..."
        self.keep = []          # memory the model uses (the weights path string)

    def new_context(self, options):
        with self.lock:
            if self.closed_why:
                raise _closed_error(self.path, self.closed_why)
            self._reap_orphans()
            handle = ctypes.c_void_p()
            self.lib.check(self.lib.context_create(self.model, ctypes.byref(options), ctypes.byref(handle)),
                           "aotc_context_create")
            slot = _Slot(handle.value)
            self.slots.add(slot)
            return slot

    def drop(self, slot):
        """Destroys the context of a thread that has ended (its _Context's finalizer). The
        garbage collector may run it inside a _destroy of the same slot (lock is an RLock
        for that; the slot's own lock is not, so it is not waited for): a context it cannot
        destroy now is left to the next context creation or release."""
        with self.lock:
            if slot in self.slots and not self._destroy(slot, False):
                self.orphans.append(slot)

    def _reap_orphans(self):
        orphans, self.orphans = self.orphans, []
        for slot in orphans:
            if slot in self.slots and not self._destroy(slot, False):
                self.orphans.append(slot)

    def _destroy(self, slot, wait):
        """Destroys slot's context; False if it is busy (wait=False) or the library refused.
        The handle leaves the slot before the call, so that a re-entrant call (a finalizer
        run by the garbage collector meanwhile) finds nothing left to destroy."""
        if not slot.lock.acquire(wait):
            return False
        try:
            handle, slot.handle = slot.handle, None
            if handle is not None and self.lib.context_destroy(handle) != 0:
                slot.handle = handle
                return False
        finally:
            slot.lock.release()
        self.slots.discard(slot)
        return True

    def release(self, wait=True, why="is closed"):
        """Destroys the contexts, then the model (aotc_model_destroy fails while contexts
        live). wait=True waits for runs in progress in other threads; wait=False (interpreter
        exit) skips a busy context, and then the model: the process is ending anyway."""
        with self.lock:
            if not self.closed_why:
                self.closed_why = why
            self.orphans = []
            all_gone = True
            for slot in list(self.slots):
                all_gone &= self._destroy(slot, wait)
            if all_gone and self.model is not None:
                model, self.model = self.model, None
                if self.lib.model_destroy(model) != 0:
                    self.model = model

    def forget(self):
        """After fork(): the contexts' worker threads do not exist in the child, so nothing
        of the parent's may be run or destroyed there."""
        self.closed_why = "was loaded before fork(): load it again in this process"
        for slot in self.slots:
            slot.handle = None
        self.slots = set()
        self.orphans = []
        self.model = None
        self.lock = threading.RLock()


_live_states = weakref.WeakSet()
_hooks_installed = False


def _release_all_at_exit():
    for state in list(_live_states):
        try:
            state.release(wait=False)
        except Exception:
            pass


def _forget_all_after_fork():
    for state in list(_live_states):
        state.forget()


def _install_hooks():
    global _hooks_installed
    if not _hooks_installed:
        _hooks_installed = True
        atexit.register(_release_all_at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_all_after_fork)


class _Context:
    """A thread's view of its context: the slot and the run's preallocated ctypes arrays.
    Lives in the Model's threading.local; when its thread ends it is collected and its
    finalizer destroys the context."""
    __slots__ = ("slot", "inputs", "outputs", "in_words", "out_words", "in_addr", "out_addr", "stream",
                 "in_dims", "out_dims", "last_shapes", "__weakref__")


def _describe(dtype, shape):
    return f"{dtype} [{', '.join(str(d) for d in shape)}]"


class Model:
    """A model library loaded with aotc.load (see the module's docstring).

    inputs, outputs: lists of TensorSpec. device: "cpu" or "cuda". path: the library.
    threads: threads per run of each thread's context. cuda_graphs: how many CUDA graphs each
    context of a CUDA model with named dims keeps (one per shape; None: the runtime's
    default). weights: the external weights file,
    or None when the library embeds its weights. aotc_version: the version of the aotc that
    built the library (as aotc --version prints it, without "aotc "), None for a library
    built before aotc recorded it. dims: the named dims of a model compiled with aotc --dim,
    name -> DimRange, a (min, max) tuple ({"B": (1, 8), "S": (1, 128)}), in the order the
    inputs first use them; {} for a model whose shapes are fixed.

    m(*args, **kwargs) runs it: inputs positionally in input order and/or by name. Returns
    the output (one output) or a tuple of outputs, as numpy arrays for numpy inputs and
    torch tensors for torch inputs. m.run(list) returns a list. A wrong count, dtype, shape
    or device raises AotcError before the run (for dynamic dims: a size out of its range, or
    a name with two sizes; outputs come back at the shape the inputs give them); a keyword
    that names no input, an input given twice or a missing one raises TypeError. close() (or
    a with block) releases the model; so does garbage collection. numpy has no bfloat16:
    such tensors are uint16 arrays of the raw bits on the numpy side (torch tensors are
    torch.bfloat16).
    """

    def __init__(self, path, *, threads=None, weights=None, cuda_graphs=None, max_dims=None):
        path = os.path.abspath(os.fspath(path))
        if threads is None:
            threads = os.cpu_count() or 1
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"aotc.load('{path}'): threads must be an int >= 1, got {threads!r}")
        if cuda_graphs is not None and (isinstance(cuda_graphs, bool) or not isinstance(cuda_graphs, int) or
                                        not 1 <= cuda_graphs <= 2**31 - 1):
            raise ValueError(f"aotc.load('{path}'): cuda_graphs must be None or an int >= 1, got {cuda_graphs!r}")
        if max_dims is not None and (not isinstance(max_dims, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in max_dims.items())):
            raise ValueError(f"aotc.load('{path}'): max_dims must be a dict of dim name -> int, got {max_dims!r}")
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, "aotc: no such model library", path)
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "aotc: a directory, not a model library", path)
        try:
            cdll = _open_library(path)
        except OSError as e:
            cdll = _open_after_torch(path, str(e))
            if cdll is None:
                raise ValueError(f"aotc: cannot load '{path}': {e}" + _load_hint(str(e))) from None
        try:
            version_fn = cdll.aotc_abi_version
        except AttributeError:
            raise ValueError(f"aotc: '{path}' is not an aotc model library: it does not export "
                             "aotc_abi_version") from None
        version_fn.restype = ctypes.c_uint32
        version_fn.argtypes = []
        version = version_fn()  # checked before any other signature is trusted
        if version != ABI_VERSION:
            raise AotcError("AOTC_ERR_ABI_MISMATCH", f"model '{path}' has ABI version {version}, this aotc "
                                                     f"package supports version {ABI_VERSION}")
        try:
            lib = _Library(cdll)
        except AttributeError as e:
            raise ValueError(f"aotc: '{path}' is not an aotc model library: {e}") from None

        self.path = path
        self.threads = threads
        self.cuda_graphs = cuda_graphs
        self.weights = None
        # The version of the aotc that generated the library ("0.1.0 (git ...)"); None for a
        # library built before aotc recorded it (no aotc_compiler_version) or without one.
        self.aotc_version = None
        if lib.compiler_version is not None:
            self.aotc_version = lib.compiler_version().decode("utf-8", "replace") or None
        self.device = "cpu"
        self._cuda_index = None
        self._torch_device = None
        device = ctypes.c_int32(0)
        if lib.model_device is not None:
            lib.check(lib.model_device(ctypes.byref(device)), "aotc_model_device")
        torch = None
        if device.value == _DEVICE_CUDA:
            self.device = "cuda"
            try:
                import torch
            except ImportError:
                raise ImportError(f"aotc: '{path}' is a CUDA model library, which takes CUDA torch tensors: "
                                  "install torch with CUDA") from None
            if not torch.cuda.is_available():
                raise AotcError("AOTC_ERR_SYSTEM", f"model '{path}' runs on CUDA, but torch sees no CUDA GPU")
            # The model lives on the device current now; its contexts and runs use it.
            self._cuda_index = torch.cuda.current_device()
            self._torch_device = torch.device("cuda", self._cuda_index)
            if lib.context_set_cuda_stream is None:
                raise ValueError(f"aotc: '{path}' is a CUDA model without aotc_context_set_cuda_stream")

        state = _State(lib, path)
        self._state = state
        self._create_model(lib, state, weights, torch)
        _install_hooks()
        _live_states.add(state)
        self._finalizer = weakref.finalize(self, state.release)
        self._finalizer.atexit = False  # _release_all_at_exit does it, without waiting
        self._limits = None  # aotc_dim_limit array of max_dims, kept alive for every context
        try:
            self._read_signature(lib, state.model)
            if max_dims:
                self._limit_dims(lib, state, max_dims)
        except BaseException:
            self.close()
            raise
        self._tls = threading.local()
        self._run_fn = lib.run
        self._model_handle = state.model
        self._n_in = len(self.inputs)
        self._n_out = len(self.outputs)

    def _create_model(self, lib, state, weights, torch):
        path = self.path
        external = False
        if lib.model_weights_info is not None:
            info = _WeightsInfo()
            lib.check(lib.model_weights_info(ctypes.byref(info)), "aotc_model_weights_info")
            external = info.location == _WEIGHTS_EXTERNAL
        handle = ctypes.c_void_p()
        if not external:
            if weights is not None:
                raise ValueError(f"aotc: model '{path}' has its weights embedded: weights={weights!r} is only for "
                                 "libraries compiled with aotc --weights file")
            create = lambda: lib.model_create(ctypes.byref(handle))  # noqa: E731
        else:
            if lib.model_create_v2 is None:
                raise ValueError(f"aotc: '{path}' has external weights but no aotc_model_create_v2")
            weights_path = os.path.abspath(os.fspath(weights)) if weights is not None \
                else _default_weights_path(path)
            if not os.path.isfile(weights_path):
                how = "the weights file given is missing" if weights is not None else \
                    "expected beside it, not found (pass weights=FILE)"
                raise FileNotFoundError(errno.ENOENT, f"aotc: model '{path}' keeps its weights in a separate "
                                                      f"file: {how}", weights_path)
            options = _ModelOptions()
            encoded = os.fsencode(weights_path)
            state.keep.append(encoded)
            options.weights_path = encoded
            self.weights = weights_path
            create = lambda: lib.model_create_v2(ctypes.byref(options), ctypes.byref(handle))  # noqa: E731
        if self._cuda_index is not None:
            with torch.cuda.device(self._cuda_index):  # CUDA models bind the current device
                status = create()
        else:
            status = create()
        lib.check(status, "creating the model")
        state.model = handle.value

    def _limit_dims(self, lib, state, max_dims):
        """max_dims: each context runs at sizes up to these only, with an arena placed for them
        (aotc_context_options.dim_limits); self.dims shows the ranges that remain."""
        if not self.dims:
            raise ValueError(f"aotc.load('{self.path}'): max_dims is for a model with named dims (aotc --dim); "
                             "every shape of this one is fixed")
        unknown = [k for k in max_dims if k not in self.dims]
        if unknown:
            raise ValueError(f"aotc.load('{self.path}'): max_dims names {', '.join(repr(k) for k in unknown)}, "
                             f"not a dim of the model (its dims: {', '.join(self.dims)})")
        if lib.model_arena_requirements_v2 is None:
            raise ValueError(f"aotc.load('{self.path}'): max_dims needs a library built by aotc 0.1 with ABI "
                             "minor version 6 or later: rebuild it")
        limits = (_DimLimit * len(max_dims))()
        for limit, (name, value) in zip(limits, max_dims.items()):
            encoded = name.encode("utf-8")
            state.keep.append(encoded)
            limit.name = encoded
            limit.max = value
        options = _ContextOptions()
        options.num_threads = self.threads
        options.num_dim_limits = len(max_dims)
        options.dim_limits = ctypes.addressof(limits)
        need, alignment = ctypes.c_uint64(), ctypes.c_uint64()
        status = lib.model_arena_requirements_v2(state.model, ctypes.byref(options), ctypes.byref(need),
                                                 ctypes.byref(alignment))
        if status:
            error = lib.error(status, "aotc_model_arena_requirements_v2")
            raise ValueError(f"aotc.load('{self.path}'): max_dims: {error.message}")
        self._limits = limits
        for name, value in max_dims.items():
            r = self.dims[name]
            self.dims[name] = DimRange(r[0], value // r.multiple_of * r.multiple_of, r.multiple_of)

    def _read_signature(self, lib, model):
        self.dims = {}  # name -> DimRange, for the named dims of the inputs

        def read(count_fn, info_fn, range_fn, what):
            count = ctypes.c_size_t()
            lib.check(count_fn(model, ctypes.byref(count)), f"aotc_model_num_{what}s")
            specs = []
            largest = []  # the largest shape of each: what _tensor_array starts with
            for i in range(count.value):
                info = _TensorInfo()
                lib.check(info_fn(model, i, ctypes.byref(info)), f"aotc_model_{what}_info")
                dtype = _DTYPE_NAMES.get(info.dtype)
                if dtype is None or not 0 <= info.rank <= _MAX_RANK or (info.rank and not info.dims):
                    raise AotcError("AOTC_ERR_INTERNAL", f"model '{self.path}' reports an invalid {what} {i}")
                name = (info.name or b"").decode("utf-8", "backslashreplace")
                shape = [int(info.dims[d]) for d in range(info.rank)]
                big = list(shape)
                for d in range(info.rank):
                    if shape[d] >= 0:
                        continue
                    # -1: a dynamic dim (minor version 4), named by its range.
                    if range_fn is None:
                        raise AotcError("AOTC_ERR_INTERNAL", f"model '{self.path}' reports a dynamic dim in {what} "
                                                             f"{i} but has no aotc_model_{what}_dim_range")
                    r = _DimRange()
                    lib.check(range_fn(model, i, d, ctypes.byref(r)), f"aotc_model_{what}_dim_range")
                    if not r.name or not 0 <= r.min <= r.max or r.multiple_of < 1:
                        raise AotcError("AOTC_ERR_INTERNAL", f"model '{self.path}' reports an invalid range for "
                                                             f"dim {d} of {what} {i}")
                    dim_name = r.name.decode("utf-8", "backslashreplace")
                    shape[d] = dim_name
                    big[d] = int(r.max)
                    if what == "input" and dim_name not in self.dims:
                        self.dims[dim_name] = DimRange(int(r.min), int(r.max), int(r.multiple_of))
                specs.append(TensorSpec(name, dtype, tuple(shape)))
                largest.append((tuple(big), int(info.size_bytes)))
            return specs, largest

        self.inputs, in_largest = read(lib.model_num_inputs, lib.model_input_info, lib.model_input_dim_range,
                                       "input")
        self.outputs, out_largest = read(lib.model_num_outputs, lib.model_output_info, lib.model_output_dim_range,
                                         "output")
        self._input_index = {spec.name: i for i, spec in enumerate(self.inputs)}
        self._dynamic = bool(self.dims) or any(spec.dynamic for spec in self.outputs)
        if self._dynamic and lib.model_output_dims is None:
            raise AotcError("AOTC_ERR_INTERNAL", f"model '{self.path}' has dynamic dims but no aotc_model_output_dims")
        self._plans = {}  # dynamic dims: input shapes -> what _plan works out for them
        self._in_largest = [shape for shape, _ in in_largest]
        self._out_largest = [shape for shape, _ in out_largest]
        # Filled-in aotc_tensor fields, shared by every context's arrays.
        memory = _MEMORY_DEVICE if self.device == "cuda" else _MEMORY_HOST
        dtype_codes = {name: code for code, name in _DTYPE_NAMES.items()}

        def fields(spec, shape):  # shape: the spec's, or for dynamic dims the largest
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            count = 1
            for d in shape:
                count *= d
            return (dims, dtype_codes[spec.dtype], len(shape), count * _DTYPE_SIZES[spec.dtype], memory)

        self._in_fields = [fields(s, shape) for s, shape in zip(self.inputs, self._in_largest)]
        self._out_fields = [fields(s, shape) for s, shape in zip(self.outputs, self._out_largest)]
        self._in_shapes = [s.shape for s in self.inputs]
        self._in_np = [_NUMPY_DTYPES[s.dtype] for s in self.inputs]
        self._out_np = [(s.shape, _NUMPY_DTYPES[s.dtype]) for s in self.outputs]
        self._in_torch = None   # torch dtypes, set at the first torch call
        self._out_torch = None

    # ---- public API ----

    @property
    def closed(self):
        return self._state.closed_why is not None

    def close(self):
        """Destroys every context (those of ended threads included), then the model. Safe to
        call twice; a run in progress in another thread finishes first."""
        self._finalizer()
        self._state.release()  # when the finalizer already ran (a second close)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        ins = ", ".join(f"{s.name}: {_describe(s.dtype, s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{s.name}: {_describe(s.dtype, s.shape)}" for s in self.outputs)
        dims = "".join(f", {name}={r.describe()}" for name, r in self.dims.items())
        return (f"<aotc.Model '{self.path}' {self.device}, threads={self.threads}"
                f"{', closed' if self.closed else ''}: ({ins}) -> ({outs}){dims}>")

    def __call__(self, *args, **kwargs):
        """Runs the model; see the class docstring."""
        if kwargs:
            args = self._bind(args, kwargs)
        out = self._run(args)
        return out[0] if self._n_out == 1 else tuple(out)

    def run(self, inputs):
        """Runs the model on inputs (a list or tuple in input order, or a dict by name) and
        returns the list of outputs."""
        if isinstance(inputs, dict):
            inputs = self._bind((), inputs)
        elif not isinstance(inputs, (list, tuple)):
            raise TypeError(f"Model.run takes a list of inputs, got {type(inputs).__name__}")
        return self._run(inputs)

    # ---- the call path ----

    def _bind(self, args, kwargs):
        """Positional args then keyword args, in input order; TypeError names the problem."""
        names = [s.name for s in self.inputs]
        if len(args) > len(names):
            raise TypeError(f"model '{self.path}' takes {len(names)} input(s) ({', '.join(names)}), "
                            f"got {len(args)} positional and {len(kwargs)} keyword")
        bound = list(args) + [None] * (len(names) - len(args))
        given = [True] * len(args) + [False] * (len(names) - len(args))
        unknown = [k for k in kwargs if k not in self._input_index]
        if unknown:
            raise TypeError(f"model '{self.path}' has no input(s) {', '.join(repr(k) for k in unknown)} "
                            f"(its inputs: {', '.join(repr(n) for n in names)})")
        twice = [k for k in kwargs if self._input_index[k] < len(args)]
        if twice:
            raise TypeError(f"input(s) {', '.join(repr(k) for k in twice)} given both positionally and by name")
        for k, v in kwargs.items():
            bound[self._input_index[k]] = v
            given[self._input_index[k]] = True
        missing = [n for n, g in zip(names, given) if not g]
        if missing:
            raise TypeError(f"missing input(s) {', '.join(repr(n) for n in missing)} of model '{self.path}'")
        return bound

    def _new_context(self):
        state = self._state
        options = _ContextOptions()
        options.num_threads = self.threads
        options.cuda_graph_cache = self.cuda_graphs or 0  # 0: the runtime's default
        if self._limits is not None:
            options.num_dim_limits = len(self._limits)
            options.dim_limits = ctypes.addressof(self._limits)
        ctx = _Context()
        if self._cuda_index is not None:
            torch = sys.modules["torch"]
            with torch.cuda.device(self._cuda_index):
                slot = state.new_context(options)
        else:
            slot = state.new_context(options)
        ctx.slot = slot
        ctx.stream = None
        ctx.inputs, ctx.in_words, ctx.in_addr = self._tensor_array(self._in_fields)
        ctx.outputs, ctx.out_words, ctx.out_addr = self._tensor_array(self._out_fields)
        ctx.in_dims = ctx.out_dims = ctx.last_shapes = None
        if self._dynamic:
            # The dims vary by call: each context has its own arrays of them.
            ctx.in_dims = self._own_dims(ctx.inputs, self._in_largest)
            ctx.out_dims = self._own_dims(ctx.outputs, self._out_largest)
        weakref.finalize(ctx, state.drop, slot).atexit = False
        self._tls.ctx = ctx
        return ctx

    @staticmethod
    def _own_dims(array, shapes):
        own = []
        for t, shape in zip(array, shapes):
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            t.dims = ctypes.addressof(dims)
            own.append(dims)
        return own

    @staticmethod
    def _tensor_array(fields):
        array = (_Tensor * max(len(fields), 1))()
        for t, (dims, dtype, rank, size, memory) in zip(array, fields):
            t.dtype, t.rank, t.dims, t.size_bytes, t.memory = dtype, rank, ctypes.addressof(dims), size, memory
        words = (ctypes.c_uint64 * (_WORDS_PER_TENSOR * len(array))).from_buffer(array)
        return array, words, ctypes.addressof(array)

    def _run(self, inputs):
        n = self._n_in
        if len(inputs) != n:
            raise AotcError("AOTC_ERR_WRONG_COUNT",
                            f"model '{self.path}' takes {n} input(s) "
                            f"({', '.join(s.name for s in self.inputs)}), got {len(inputs)}")
        try:
            ctx = self._tls.ctx
        except AttributeError:
            ctx = self._new_context()
        words = ctx.in_words
        shapes = self._in_shapes
        keep = None  # the contiguous copies, alive until the run is done
        if self._dynamic:
            outputs, keep = self._dynamic_inputs(ctx, inputs)
            torch = sys.modules.get("torch")
        elif self._cuda_index is None and (not n or isinstance(inputs[0], np.ndarray)):
            np_dtypes = self._in_np
            for i in range(n):
                a = inputs[i]
                if (type(a) is np.ndarray and a.dtype is np_dtypes[i] and a.flags.c_contiguous
                        and a.shape == shapes[i]):
                    words[_WORDS_PER_TENSOR * i] = a.ctypes.data
                else:
                    a = self._numpy_input(i, a)
                    keep = [a] if keep is None else keep + [a]
                    words[_WORDS_PER_TENSOR * i] = a.ctypes.data
            outputs = [np.empty(shape, dtype) for shape, dtype in self._out_np]
            out_words = ctx.out_words
            for i in range(self._n_out):
                out_words[_WORDS_PER_TENSOR * i] = outputs[i].ctypes.data
        else:
            torch = sys.modules.get("torch")
            if torch is None:  # neither numpy nor torch: not imported, so no tensor either
                self._input_type_error(0, inputs[0])
            if self._in_torch is None:
                self._set_torch_dtypes(torch)
            torch_dtypes = self._in_torch
            cuda = self._cuda_index is not None
            for i in range(n):
                t = inputs[i]
                if (type(t) is torch.Tensor and t.dtype is torch_dtypes[i]
                        and (t.is_cuda and t.get_device() == self._cuda_index if cuda else t.is_cpu)
                        and t.is_contiguous() and t.shape == shapes[i]):
                    words[_WORDS_PER_TENSOR * i] = t.data_ptr()
                else:
                    t = self._torch_input(i, t, torch)
                    keep = [t] if keep is None else keep + [t]
                    words[_WORDS_PER_TENSOR * i] = t.data_ptr()
            device = self._torch_device
            if device is None:
                outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in self._out_torch]
            else:
                outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self._out_torch]
            out_words = ctx.out_words
            for i in range(self._n_out):
                out_words[_WORDS_PER_TENSOR * i] = outputs[i].data_ptr()

        slot = ctx.slot
        if slot.handle is None:  # checked before the lock too: after fork() it may be held forever
            raise _closed_error(self.path, self._state.closed_why or "is closed")
        slot.lock.acquire()
        try:
            handle = slot.handle
            if handle is None:
                raise _closed_error(self.path, self._state.closed_why or "is closed")
            if self._cuda_index is not None:
                # Ordered with torch's work on this thread's current stream: no host wait.
                # torch's default stream is CUDA's legacy default stream, handle 0, but 0 is
                # NULL to aotc (the context's own stream, not ordered with it): aotc.h says
                # to pass cudaStreamLegacy, (void*)1, for it.
                stream = torch.cuda.current_stream(self._cuda_index).cuda_stream or _CUDA_STREAM_LEGACY
                # Set only when it changes. The context keeps the handle between runs but
                # uses it only in runs (aotc_context_destroy leaves a caller's stream alone),
                # so a stream torch has since dropped is harmless there.
                if stream != ctx.stream:
                    self._state.lib.check(self._state.lib.context_set_cuda_stream(handle, stream),
                                          "aotc_context_set_cuda_stream")
                    ctx.stream = stream
            status = self._run_fn(self._model_handle, handle, ctx.in_addr, n, ctx.out_addr, self._n_out)
        finally:
            slot.lock.release()
        if status:
            raise self._state.lib.error(status, "aotc_run")
        return outputs

    def _last_input_pointers(self):
        """The data pointers the calling thread's last run passed for its inputs (for tests:
        a contiguous input of the right dtype is passed as it is, not copied)."""
        ctx = self._tls.ctx
        return [ctx.inputs[i].data or 0 for i in range(self._n_in)]

    # ---- dynamic dims (aotc --dim) ----

    def _dynamic_inputs(self, ctx, inputs):
        """_run's input side for a model with dynamic dims: the inputs checked and passed
        (by pointer when they are dense and of the right dtype, as for fixed shapes), their
        dims and sizes written into the context's arrays, the outputs allocated at the shape
        these inputs give them. Returns (outputs, the copies to keep alive or None)."""
        n = self._n_in
        keep = None
        words = ctx.in_words
        shapes = []
        if self._cuda_index is None and (not n or isinstance(inputs[0], np.ndarray)):
            torch = None
            np_dtypes = self._in_np
            for i in range(n):
                a = inputs[i]
                if not (type(a) is np.ndarray and a.dtype is np_dtypes[i] and a.flags.c_contiguous):
                    a = self._numpy_input(i, a)
                    keep = [a] if keep is None else keep + [a]
                shapes.append(a.shape)
                words[_WORDS_PER_TENSOR * i] = a.ctypes.data
        else:
            torch = sys.modules.get("torch")
            if torch is None:  # neither numpy nor torch: not imported, so no tensor either
                self._input_type_error(0, inputs[0])
            if self._in_torch is None:
                self._set_torch_dtypes(torch)
            torch_dtypes = self._in_torch
            cuda = self._cuda_index is not None
            for i in range(n):
                t = inputs[i]
                if not (type(t) is torch.Tensor and t.dtype is torch_dtypes[i]
                        and (t.is_cuda and t.get_device() == self._cuda_index if cuda else t.is_cpu)
                        and t.is_contiguous()):
                    t = self._torch_input(i, t, torch)
                    keep = [t] if keep is None else keep + [t]
                shapes.append(t.shape)  # a torch.Size: a tuple, equal to and hashed as one
                words[_WORDS_PER_TENSOR * i] = t.data_ptr()
        shapes = tuple(shapes)
        plan = self._plans.get(shapes)
        if plan is None:
            plan = self._plan(ctx, shapes)  # checks the shapes; raises with the reason
        if ctx.last_shapes != shapes:
            self._write_dims(ctx, shapes, plan)
        out_words = ctx.out_words
        if torch is None:
            outputs = [np.empty(shape, dtype) for shape, dtype in plan[3]]
            for i in range(self._n_out):
                out_words[_WORDS_PER_TENSOR * i] = outputs[i].ctypes.data
        else:
            device = self._torch_device
            outputs = [torch.empty(shape, dtype=dtype, device=device)
                       for shape, (_, dtype) in zip(plan[0], self._out_torch)]
            for i in range(self._n_out):
                out_words[_WORDS_PER_TENSOR * i] = outputs[i].data_ptr()
        return outputs, keep

    @staticmethod
    def _write_dims(ctx, shapes, plan):
        """The context's aotc_tensor dims and size_bytes for these input shapes."""
        out_shapes, in_bytes, out_bytes = plan[:3]
        ctx.last_shapes = None
        words = ctx.in_words
        for i, shape in enumerate(shapes):
            ctx.in_dims[i][:len(shape)] = shape
            words[_WORDS_PER_TENSOR * i + _SIZE_WORD] = in_bytes[i]
        words = ctx.out_words
        for i, shape in enumerate(out_shapes):
            ctx.out_dims[i][:len(shape)] = shape
            words[_WORDS_PER_TENSOR * i + _SIZE_WORD] = out_bytes[i]
        ctx.last_shapes = shapes

    def _plan(self, ctx, shapes):
        """For input shapes not seen before: checks them against the specs and ranges, then
        asks the library for the outputs' shapes (the authority on them) and caches them
        with every tensor's byte size."""
        self._check_shapes(shapes)
        n = self._n_in
        ctx.last_shapes = None
        for i in range(n):
            ctx.in_dims[i][:len(shapes[i])] = shapes[i]
        lib = self._state.lib
        out_dims = (ctypes.c_int64 * _MAX_RANK)()
        out_shapes = []
        slot = ctx.slot
        # Under the context's lock, as a run: close() does not destroy the model meanwhile.
        if slot.handle is None:
            raise _closed_error(self.path, self._state.closed_why or "is closed")
        with slot.lock:
            if slot.handle is None:
                raise _closed_error(self.path, self._state.closed_why or "is closed")
            for j, spec in enumerate(self.outputs):
                lib.check(lib.model_output_dims(self._model_handle, ctx.in_addr, n, j, out_dims),
                          "aotc_model_output_dims")
                out_shapes.append(tuple(out_dims[d] for d in range(len(spec.shape))))

        def nbytes(shape, spec):
            count = _DTYPE_SIZES[spec.dtype]
            for d in shape:
                count *= d
            return count
        # (output shapes, input bytes, output bytes, (output shape, numpy dtype) pairs)
        plan = (tuple(out_shapes), tuple(nbytes(s, spec) for s, spec in zip(shapes, self.inputs)),
                tuple(nbytes(s, spec) for s, spec in zip(out_shapes, self.outputs)),
                tuple((shape, dtype) for shape, (_, dtype) in zip(out_shapes, self._out_np)))
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[shapes] = plan
        return plan

    def _check_shapes(self, shapes):
        """The inputs' shapes against their specs: rank, fixed sizes, each named dim in its
        range, and a name the same size everywhere. AotcError (AOTC_ERR_WRONG_SHAPE) naming
        the input, the dim, the size and the range."""
        seen = {}  # dim name -> (size, input index, dim index)
        for i, (spec, shape) in enumerate(zip(self.inputs, shapes)):
            got = tuple(int(d) for d in shape)
            if len(got) != len(spec.shape):
                raise self._mismatch("AOTC_ERR_WRONG_SHAPE", i, spec.dtype, got,
                                     f" (rank {len(got)}, expected rank {len(spec.shape)})")
            for d, (want, size) in enumerate(zip(spec.shape, got)):
                if type(want) is not str:
                    if size != want:
                        raise self._mismatch("AOTC_ERR_WRONG_SHAPE", i, spec.dtype, got,
                                             f" (dim {d} is fixed at {want})")
                    continue
                r = self.dims[want]
                where = f"input '{spec.name}': {want} = {size}"
                shown = f"expected {_describe(spec.dtype, spec.shape)}, got {_describe(spec.dtype, got)}"
                earlier = seen.get(want)
                if earlier is not None:
                    if size != earlier[0]:
                        other = f"in dim {earlier[2]} of the same input" if earlier[1] == i else \
                            f"in input '{self.inputs[earlier[1]].name}'"
                        raise AotcError("AOTC_ERR_WRONG_SHAPE",
                                        f"{where} (dim {d}), but {want} = {earlier[0]} {other}: a dim name is one "
                                        f"size in every input ({shown})")
                    continue
                if not r[0] <= size <= r[1]:
                    raise AotcError("AOTC_ERR_WRONG_SHAPE",
                                    f"{where} (dim {d}) is outside its range {r[0]}..{r[1]} ({shown})")
                if size % r.multiple_of:
                    raise AotcError("AOTC_ERR_WRONG_SHAPE",
                                    f"{where} (dim {d}) is not a multiple of {r.multiple_of}, which the model "
                                    f"needs ({want}: {r[0]}..{r[1]}, multiples of {r.multiple_of}; {shown})")
                seen[want] = (size, i, d)

    # ---- the slow paths: conversions and errors ----

    def _input_type_error(self, i, x):
        spec = self.inputs[i]
        kind = "CUDA torch tensor" if self.device == "cuda" else "numpy array or a torch tensor"
        raise TypeError(f"input '{spec.name}': expected a {kind}, got {type(x).__module__}.{type(x).__qualname__}")

    def _mismatch(self, status, i, got_dtype, got_shape, note=""):
        spec = self.inputs[i]
        return AotcError(status, f"input '{spec.name}': expected {_describe(spec.dtype, spec.shape)}, "
                                 f"got {_describe(got_dtype, got_shape)}{note}")

    def _numpy_input(self, i, a):
        """Checks a numpy input that missed the fast path; returns a dense array to pass."""
        if not isinstance(a, np.ndarray):
            if type(a).__module__.startswith("torch"):
                raise TypeError(f"input '{self.inputs[i].name}' is a torch tensor but input "
                                f"'{self.inputs[0].name}' is a numpy array: give all inputs as numpy arrays "
                                "or all as torch tensors")
            self._input_type_error(i, a)
        spec = self.inputs[i]
        want = self._in_np[i]
        dtype = a.dtype
        if dtype != want:
            if spec.dtype == "bfloat16" and dtype.name == "bfloat16" and dtype.itemsize == 2:
                a = a.view(np.uint16)
            elif dtype.newbyteorder("=") == want:
                a = a.astype(want)  # non-native byte order: a native copy
            else:
                raise self._mismatch("AOTC_ERR_WRONG_DTYPE", i, dtype.name, a.shape,
                                     " (bfloat16 inputs are uint16 arrays of the raw bits)"
                                     if spec.dtype == "bfloat16" else "")
        if a.shape != spec.shape and not self._dynamic:  # dynamic dims: _check_shapes
            raise self._mismatch("AOTC_ERR_WRONG_SHAPE", i, spec.dtype, a.shape)
        if not (a.flags.c_contiguous and a.flags.aligned):
            a = np.ascontiguousarray(a)  # a copy
        return a

    def _set_torch_dtypes(self, torch):
        names = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                 "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
        self._out_torch = [(s.shape, names[s.dtype]) for s in self.outputs]
        self._in_torch = [names[s.dtype] for s in self.inputs]

    def _torch_input(self, i, t, torch):
        """Checks a torch input that missed the fast path; returns a dense tensor to pass."""
        spec = self.inputs[i]
        if not isinstance(t, torch.Tensor):
            if isinstance(t, np.ndarray) and self._cuda_index is not None:
                raise AotcError("AOTC_ERR_INVALID_ARGUMENT",
                                f"input '{spec.name}': model '{self.path}' runs on {self._torch_device} and takes "
                                "CUDA torch tensors there, got a numpy array")
            if isinstance(t, np.ndarray) and i > 0:
                raise TypeError(f"input '{spec.name}' is a numpy array but input '{self.inputs[0].name}' is a "
                                "torch tensor: give all inputs as numpy arrays or all as torch tensors")
            self._input_type_error(i, t)
        got_dtype = str(t.dtype).replace("torch.", "")
        if t.dtype is not self._in_torch[i]:
            raise self._mismatch("AOTC_ERR_WRONG_DTYPE", i, got_dtype, tuple(t.shape))
        if tuple(t.shape) != spec.shape and not self._dynamic:  # dynamic dims: _check_shapes
            raise self._mismatch("AOTC_ERR_WRONG_SHAPE", i, got_dtype, tuple(t.shape))
        if self._cuda_index is not None:
            if not t.is_cuda or t.get_device() != self._cuda_index:
                raise AotcError("AOTC_ERR_INVALID_ARGUMENT",
                                f"input '{spec.name}': model '{self.path}' runs on {self._torch_device} and takes "
                                f"tensors there, got a tensor on {t.device}"
                                + (" (a CPU tensor: move it with .to('cuda'))" if t.device.type == "cpu" else ""))
        elif not t.is_cpu:
            raise AotcError("AOTC_ERR_INVALID_ARGUMENT",
                            f"input '{spec.name}': model '{self.path}' runs on the CPU, got a tensor on {t.device} "
                            "(move it with .cpu())")
        if t.layout is not torch.strided:
            raise AotcError("AOTC_ERR_INVALID_ARGUMENT",
                            f"input '{spec.name}': expected a dense (strided) tensor, got layout {t.layout}")
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        return t.contiguous()  # a copy when t is not contiguous (a plain Tensor subclass: itself)


def load(path, *, threads=None, weights=None, cuda_graphs=None, max_dims=None):
    """Loads a model library built by aotc and creates its model.

    threads: threads each Python thread's context uses per run (default os.cpu_count());
    where several Python threads run the model at once, give each a share of the cores.
    cuda_graphs: for a CUDA model with named dims (aotc --target cuda --dim), how many CUDA
    graphs (one per input shape, captured at its first run) each context keeps, dropping the
    least recently used (default None: the runtime's, 8); other models ignore it.
    max_dims: for a model with named dims (aotc --dim), the largest size of some of them
    that this process runs at ({"S": 128}): each context's arena is placed for those sizes,
    smaller than for the model's largest, and a larger input raises AotcError; Model.dims
    shows the ranges that remain. ValueError for a name that is not a dim or a size out of
    its range.
    weights: the weights file of a library built with aotc --weights file (default:
    MODEL.weights beside MODEL.so). Raises FileNotFoundError for a missing library or
    weights file, ValueError for a file that is not an aotc model library, AotcError when
    the library refuses (e.g. wrong weights)."""
    return Model(path, threads=threads, weights=weights, cuda_graphs=cuda_graphs, max_dims=max_dims)
