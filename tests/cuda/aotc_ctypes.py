"""A minimal ctypes binding of the aotc C ABI (runtime/include/aotc/aotc.h), enough to run a
model .so on torch tensors: host tensors go through AOTC_MEMORY_HOST, CUDA tensors through
AOTC_MEMORY_DEVICE on the context's stream (which can be torch's current stream). Used by
the CUDA tests (tests/cuda/) and the GPU benchmark (bench/gpu_bench.py)."""
import ctypes

AOTC_OK = 0
DTYPES = {1: "float32", 2: "float16", 3: "bfloat16", 4: "int64", 5: "int32", 6: "bool"}
DTYPE_CODES = {"float32": 1, "float16": 2, "bfloat16": 3, "int64": 4, "int32": 5, "bool": 6}
MEMORY_HOST, MEMORY_DEVICE = 0, 1
DEVICE_CPU, DEVICE_CUDA = 0, 1


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_uint64),
                ("memory", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 3)]


class DimLimit(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("max", ctypes.c_int64), ("reserved", ctypes.c_uint64 * 2)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("cuda_graph_cache", ctypes.c_int32),
                ("num_dim_limits", ctypes.c_int32), ("reserved_i", ctypes.c_int32 * 1),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_uint64),
                ("cuda_stream", ctypes.c_void_p), ("dim_limits", ctypes.c_void_p)]


class AotcError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status = status
        self.message = message


class Library:
    """One loaded model library."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        L.aotc_last_error.restype = ctypes.c_char_p
        L.aotc_abi_minor_version.restype = ctypes.c_uint32
        for name in ["aotc_model_create", "aotc_model_destroy", "aotc_model_num_inputs", "aotc_model_num_outputs",
                     "aotc_model_input_info", "aotc_model_output_info", "aotc_context_create",
                     "aotc_context_destroy", "aotc_run", "aotc_model_device", "aotc_context_set_cuda_stream",
                     "aotc_context_cuda_stream"]:
            getattr(L, name).restype = ctypes.c_int32

    def check(self, status):
        if status != AOTC_OK:
            raise AotcError(status, self.lib.aotc_last_error().decode())

    def device(self):
        d = ctypes.c_int32(-1)
        self.check(self.lib.aotc_model_device(ctypes.byref(d)))
        return d.value


class Model:
    def __init__(self, library):
        self.L = library
        self.handle = ctypes.c_void_p()
        library.check(library.lib.aotc_model_create(ctypes.byref(self.handle)))
        self.inputs = self._infos("input")
        self.outputs = self._infos("output")

    def _infos(self, kind):
        n = ctypes.c_size_t()
        self.L.check(getattr(self.L.lib, f"aotc_model_num_{kind}s")(self.handle, ctypes.byref(n)))
        infos = []
        for i in range(n.value):
            info = TensorInfo()
            self.L.check(getattr(self.L.lib, f"aotc_model_{kind}_info")(self.handle, ctypes.c_size_t(i),
                                                                          ctypes.byref(info)))
            infos.append({"name": info.name.decode(), "dtype": DTYPES[info.dtype],
                          "shape": [info.dims[d] for d in range(info.rank)], "bytes": info.size_bytes})
        return infos

    def destroy(self):
        if self.handle:
            self.L.check(self.L.lib.aotc_model_destroy(self.handle))
            self.handle = ctypes.c_void_p()


class Context:
    """A context; stream is a cudaStream_t as an int (torch.cuda.Stream.cuda_stream) or None;
    graph_cache: aotc_context_options.cuda_graph_cache (0: the runtime's default); limits:
    aotc_context_options.dim_limits as {dim name: largest size} (None: the model's)."""

    def __init__(self, model, stream=None, graph_cache=0, limits=None):
        self.model = model
        self.L = model.L
        self.handle = ctypes.c_void_p()
        options = ContextOptions()
        options.num_threads = 1
        options.cuda_stream = stream
        options.cuda_graph_cache = graph_cache
        if limits:
            array = (DimLimit * len(limits))()
            for entry, (name, size) in zip(array, limits.items()):
                entry.name = name.encode()
                entry.max = size
            options.num_dim_limits = len(limits)
            options.dim_limits = ctypes.addressof(array)
        self.L.check(self.L.lib.aotc_context_create(model.handle, ctypes.byref(options), ctypes.byref(self.handle)))
        self._dims = []

    def output_dims(self, index):
        """aotc_context_output_dims: output index's dims in the last run."""
        dims = (ctypes.c_int64 * 8)()
        self.L.lib.aotc_context_output_dims.restype = ctypes.c_int32
        self.L.check(self.L.lib.aotc_context_output_dims(self.handle, ctypes.c_size_t(index), dims))
        return [dims[d] for d in range(len(self.model.outputs[index]["shape"]))]

    def set_stream(self, stream):
        self.L.check(self.L.lib.aotc_context_set_cuda_stream(self.handle, ctypes.c_void_p(stream)))

    def stream(self):
        s = ctypes.c_void_p()
        self.L.check(self.L.lib.aotc_context_cuda_stream(self.handle, ctypes.byref(s)))
        return s.value

    def _tensors(self, tensors):
        array = (Tensor * max(1, len(tensors)))()
        for i, t in enumerate(tensors):
            dims = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
            self._dims.append(dims)
            array[i].data = t.data_ptr()
            array[i].dtype = DTYPE_CODES[str(t.dtype).replace("torch.", "")]
            array[i].rank = t.dim()
            array[i].dims = dims
            array[i].size_bytes = t.numel() * t.element_size()
            array[i].memory = MEMORY_DEVICE if t.is_cuda else MEMORY_HOST
        return array

    def prepare(self, inputs, outputs):
        """Builds the argument arrays once (for timing loops); returns a function that runs."""
        for t in list(inputs) + list(outputs):
            assert t.is_contiguous()
        self._dims = []
        ins, outs = self._tensors(inputs), self._tensors(outputs)
        self.prepared = (ins, outs)  # the aotc_tensor arrays, for tests that alter them
        run = self.L.lib.aotc_run
        model, handle, ni, no = self.model.handle, self.handle, len(inputs), len(outputs)

        def go():
            status = run(model, handle, ins, ni, outs, no)
            if status != AOTC_OK:
                self.L.check(status)

        return go

    def run(self, inputs, outputs):
        self.prepare(inputs, outputs)()

    def destroy(self):
        if self.handle:
            self.L.check(self.L.lib.aotc_context_destroy(self.handle))
            self.handle = ctypes.c_void_p()
