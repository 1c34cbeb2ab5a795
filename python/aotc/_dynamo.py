"""The torch.compile backend "aotc".

    model = torch.compile(model, backend="aotc", options={"threads": 2})
    with torch.no_grad():
        y = model(x)

Registered through the package's torch_dynamo_backends entry point (aotc._dynamo:aotc_backend);
the function aotc_backend can also be passed itself: torch.compile(model, backend=aotc_backend).
"""
import functools
import hashlib
import keyword
import logging
import operator
import os
import threading
import time
import uuid
import warnings

from . import _compile
from ._errors import CompileError

logger = logging.getLogger("aotc")

OPTIONS = ("target", "precision", "threads", "cache_dir")
_CACHE_FORMAT = "aotc-dynamo-1"


class AotcFallbackWarning(UserWarning):
    """A graph that aotc cannot compile runs eagerly, on torch's own kernels."""


def default_cache_dir():
    """$AOTC_CACHE_DIR, else $XDG_CACHE_HOME/aotc, else ~/.cache/aotc."""
    if os.environ.get("AOTC_CACHE_DIR"):
        return os.environ["AOTC_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "aotc")
    return os.path.join(os.path.expanduser("~"), ".cache", "aotc")


def _check_options(options):
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"aotc backend: options must be a dict, not {type(options).__name__}")
    unknown = sorted(set(options) - set(OPTIONS), key=str)
    if unknown:
        raise ValueError(f"aotc backend: unknown option(s) {', '.join(repr(k) for k in unknown)} "
                         f"(the options are {', '.join(OPTIONS)})")
    target = options.get("target")
    precision = options.get("precision")
    if target is not None and target not in _compile._TARGETS:
        raise ValueError(f"aotc backend: option 'target' must be 'cpu' or 'cuda', not {target!r}")
    if precision is not None:
        if precision not in _compile._PRECISIONS:
            raise ValueError(f"aotc backend: option 'precision' must be one of "
                             f"{', '.join(_compile._PRECISIONS)}, not {precision!r}")
        if target != "cuda":
            raise ValueError("aotc backend: option 'precision' needs option target='cuda'")
    threads = options.get("threads")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"aotc backend: option 'threads' must be a positive int, not {threads!r}")
    cache_dir = options.get("cache_dir")
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise ValueError(f"aotc backend: option 'cache_dir' must be a path, not {cache_dir!r}")
    return {"target": target, "precision": precision, "threads": threads,
            "cache_dir": os.fspath(cache_dir) if cache_dir is not None else None}


def aotc_backend(gm, example_inputs, *, options=None, mode=None):
    """torch.compile backend: compiles each FX graph that dynamo captures with aotc.

    options (torch.compile(..., options={...})):
      target     "cpu" or "cuda" (default: the device of the graph's input tensors). A cuda
                 library takes CUDA tensors, on torch's current stream.
      precision  cuda's matrix products: "fp32" (default), "tf32", "fp16", "bf16".
      threads    threads per run of a CPU library (default: torch.get_num_threads() when the
                 library is loaded); the library is compiled for them (aotc --cpu-threads)
                 and cached per thread count.
      cache_dir  where compiled libraries are kept (default: $AOTC_CACHE_DIR, else
                 $XDG_CACHE_HOME/aotc, else ~/.cache/aotc).
    Any other option is a ValueError. mode is accepted and ignored (aotc has one mode).

    aotc is an inference compiler. The module's parameters and buffers (which dynamo hands the
    graph as inputs) are frozen into the library as constants when it is compiled; the graph's
    other tensor inputs stay inputs. Outputs carry no autograd history. A parameter or buffer
    that is replaced or changed in place (an optimizer step, load_state_dict) is seen at the next
    call, which compiles (or finds in the cache) a library for the new weights.

    Each library is specialised to the shapes and dtypes of its inputs. A graph with symbolic
    shapes or int/float inputs (dynamic=True, or automatic dynamic after a recompile) is
    specialised lazily: one library per distinct signature (input shapes, dtypes and the values
    of the int/float inputs) met at call time, each kept for later calls.

    A graph that aotc cannot compile (an unsupported op, an input dtype aotc lacks such as
    float64, an empty tensor) runs eagerly (gm.forward), with one AotcFallbackWarning per graph
    naming the reason (the unsupported ops). So does a graph whose meaning a library cannot
    keep: BatchNorm or dropout in training mode (call model.eval()), or an in-place change of
    one of its inputs or buffers.

    Libraries are cached on disk, keyed by a hash of the graph's code, the frozen constants
    (names, dtypes, shapes and bytes), the input specs, target and precision, torch's version and
    the compiler build (aotc._paths.compiler_fingerprint()): another process with the same model
    loads them without compiling. Cache writes are atomic (a temporary file, then os.replace).
    The logger "aotc" tells at INFO level of every cache hit and compile.
    """
    del mode
    opts = _check_options(options)
    compiled = _CompiledGraph(gm, example_inputs, opts)
    return compiled.ahead(example_inputs)


# ---------------------------------------------------------------------------------------------
# telling the module's parameters and buffers from the user's inputs

@functools.lru_cache(maxsize=None)
def _module_state_sources():
    try:
        from torch._dynamo import source as s
    except Exception:  # noqa: BLE001 (an older or newer dynamo: fall back to the names)
        return ()
    names = ("NNModuleSource", "ParamBufferSource", "UnspecializedParamBufferSource", "FSDPNNModuleSource")
    return tuple(getattr(s, n) for n in names if hasattr(s, n))


_STATE_SOURCE_NAMES = {"NNModuleSource", "UnspecializedNNModuleSource", "UnspecializedBuiltinNNModuleSource",
                       "FSDPNNModuleSource", "ParamBufferSource", "UnspecializedParamBufferSource"}


def _is_module_state(node, example, torch):
    """A placeholder that dynamo lifted from an nn.Module (a parameter, a buffer, another tensor
    attribute): its source chain passes through a module or its _parameters/_buffers (dynamo's
    NNModuleSource family, ParamBufferSource family), or the tensor is an nn.Parameter."""
    if isinstance(example, torch.nn.Parameter):
        return True
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    classes = _module_state_sources()
    seen = 0
    while source is not None and seen < 100:
        if (classes and isinstance(source, classes)) or type(source).__name__ in _STATE_SOURCE_NAMES:
            return True
        source = getattr(source, "base", None)
        seen += 1
    return False


def _input_name(node, index, taken):
    name = node.name
    if name.lower().startswith("l_"):
        name = name[2:]
    name = name.rstrip("_") or name
    if not name.isidentifier() or keyword.iskeyword(name) or name == "self" or name in taken:
        name = f"input{index}"
    while name in taken:
        name = "_" + name
    taken.add(name)
    return name


# ---------------------------------------------------------------------------------------------
# the compiled graph

class _Unsupported(Exception):
    """A reason the graph (or this signature of it) runs eagerly."""

    def __init__(self, message, ops=()):
        super().__init__(message)
        self.ops = list(ops)


class _Entry:
    """One specialisation: run(args) -> outputs, valid while the frozen constants are unchanged."""
    __slots__ = ("run", "consts")

    def __init__(self, run, consts=()):
        self.run = run
        self.consts = consts  # (arg index, tensor, _version at compile time)

    def valid(self, args):
        for i, tensor, version in self.consts:
            arg = args[i]
            if arg is not tensor or arg._version != version:
                return False
        return True


_LOADED = {}  # (library path, threads) -> aotc Model, shared by every graph of the process
_LOADED_LOCK = threading.Lock()
_graph_ids = iter(range(1, 1 << 62))


class _CompiledGraph:
    def __init__(self, gm, example_inputs, opts):
        import torch

        self.gm = gm
        self.opts = opts
        self.number = next(_graph_ids)
        self.lock = threading.RLock()
        self.entries = {}
        self.warned = False
        self.eager_reason = None

        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        examples = list(example_inputs)
        if len(examples) != len(placeholders):
            examples = [n.meta.get("example_value") for n in placeholders]
        # kind per placeholder: "input" (a tensor input of the library), "const" (a frozen
        # module tensor), "value" (an int/float/bool or a 0-d tensor of a dtype aotc's inputs
        # lack, e.g. a float that dynamo passes as a float64 tensor: specialised on its value)
        self.kinds = []
        taken = set()
        self.names = []
        for i, (node, ex) in enumerate(zip(placeholders, examples)):
            if isinstance(ex, torch.Tensor):
                if _is_module_state(node, ex, torch):
                    kind = "const"
                elif ex.dim() == 0 and _compile.dtype_name(ex.dtype) is None:
                    kind = "value"
                else:
                    kind = "input"
            else:
                kind = "value"
            self.kinds.append(kind)
            self.names.append(_input_name(node, i, taken) if kind == "input" else None)
        self.placeholder_names = [n.name for n in placeholders]
        self.input_idx = [i for i, k in enumerate(self.kinds) if k == "input"]
        self.const_idx = [i for i, k in enumerate(self.kinds) if k == "const"]
        self.value_idx = [i for i, k in enumerate(self.kinds) if k == "value"]

        # the outputs: ("lib", j) the library's output j, ("arg", i) argument i passed through,
        # ("lit", v) a constant; a non-tensor computed output (a SymInt) cannot come from aotc
        index_of = {n: i for i, n in enumerate(placeholders)}
        out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        out = out_node.args[0]
        self.out_type = type(out) if isinstance(out, (tuple, list)) else None
        items = list(out) if self.out_type is not None else [out]
        self.out_plan = []
        self.lib_outputs = []  # index into gm's outputs of each library output
        for k, item in enumerate(items):
            if isinstance(item, torch.fx.Node):
                if item in index_of:
                    self.out_plan.append(("arg", index_of[item]))
                elif isinstance(item.meta.get("example_value"), torch.Tensor) or "example_value" not in item.meta:
                    self.out_plan.append(("lib", len(self.lib_outputs)))
                    self.lib_outputs.append(k)
                else:
                    self.eager_reason = _Unsupported(
                        f"it returns a {type(item.meta.get('example_value')).__name__}, not a tensor")
                    self.out_plan.append(("lib", None))
            else:
                self.out_plan.append(("lit", item))
        if self.eager_reason is None and not self.lib_outputs:
            self.eager_reason = _Unsupported("it computes no tensor output")
        if self.eager_reason is None:
            reason = _training_or_mutation(gm, index_of)
            if reason:
                self.eager_reason = _Unsupported(reason)
        self.simple_out = all(p[0] == "lib" for p in self.out_plan) and self.out_type is not None
        logger.debug("aotc: graph %d: %d ops; inputs %s; %d frozen constants; specialised on values: %s",
                     self.number, _op_count(gm), [self.placeholder_names[i] for i in self.input_idx],
                     len(self.const_idx), [self.placeholder_names[i] for i in self.value_idx])

    def ahead(self, example_inputs):
        """The callable for dynamo: the graph compiled now for the example inputs (dynamo's real
        tensors: the first call's), or gm.forward itself where aotc cannot compile the graph."""
        examples = list(example_inputs)
        if self.eager_reason is None and len(examples) == len(self.kinds) and not any(map(_is_fake, examples)):
            with self.lock:
                self.entries[self._signature(examples)] = self._specialise(examples)
        if self.eager_reason is not None:
            if not self.warned:
                self._eager(self.eager_reason)
            return self.gm.forward
        return self

    # -- calls --------------------------------------------------------------------------------

    def __call__(self, *args):
        key = self._signature(args)
        entry = self.entries.get(key)
        if entry is None or not entry.valid(args):
            with self.lock:
                entry = self.entries.get(key)
                if entry is None or not entry.valid(args):
                    entry = self._specialise(args)
                    self.entries[key] = entry
        return entry.run(args)

    def _signature(self, args):
        key = []
        for i in self.input_idx:
            a = args[i]
            key.append((a.dtype, a.shape, a.device))
        for i in self.value_idx:
            key.append(_value_key(args[i]))
        return tuple(key)

    def _eager(self, reason):
        if not self.warned:
            self.warned = True
            what = (f"uses op(s) aotc does not support: {', '.join(reason.ops)}" if reason.ops
                    else f"cannot be compiled by aotc: {reason}")
            warnings.warn(f"aotc: torch.compile graph {self.number} ({_op_count(self.gm)} ops) {what}; "
                          "it runs eagerly", AotcFallbackWarning, stacklevel=_user_stacklevel())
        logger.info("aotc: graph %d runs eagerly: %s", self.number, reason)
        forward = self.gm.forward
        return _Entry(lambda a: forward(*a))

    def _specialise(self, args):
        import torch

        try:
            if self.eager_reason is not None:
                raise self.eager_reason
            model = self._library(args, torch)
        except _Unsupported as reason:
            if reason.ops:  # unsupported ops do not depend on the shapes: every signature runs eagerly
                self.eager_reason = reason
            return self._eager(reason)
        consts = tuple((i, args[i], args[i]._version) for i in self.const_idx)
        scalar = [args[i].dim() == 0 for i in self.input_idx]
        input_idx = self.input_idx
        run_lib = model.run

        def prepare():  # (the runtime makes non-contiguous inputs contiguous itself)
            if any(scalar):
                return lambda a: [a[i].reshape(1) if s else a[i] for i, s in zip(input_idx, scalar)]
            if len(input_idx) == 1:
                only = input_idx[0]
                return lambda a: [a[only]]
            return lambda a: [a[i] for i in input_idx]

        inputs_of = prepare()
        if not input_idx:  # no inputs: the runtime answers in numpy arrays
            run_numpy = run_lib
            bf16 = [spec.dtype == "bfloat16" for spec in model.outputs]  # bits in uint16 arrays

            def run_lib(inputs):
                return [(torch.from_numpy(o).view(torch.bfloat16) if b else torch.from_numpy(o))
                        if not isinstance(o, torch.Tensor) else o for o, b in zip(run_numpy(inputs), bf16)]
        if self.simple_out:
            out_type = self.out_type

            def run(a):
                return out_type(run_lib(inputs_of(a)))
        else:
            plan, out_type = self.out_plan, self.out_type

            def run(a):
                outs = run_lib(inputs_of(a))
                items = [outs[p[1]] if p[0] == "lib" else a[p[1]] if p[0] == "arg" else p[1] for p in plan]
                return out_type(items) if out_type is not None else items[0]

        return _Entry(run, consts)

    # -- compiling ----------------------------------------------------------------------------

    def _library(self, args, torch):
        opts = self.opts
        inputs = [args[i] for i in self.input_idx]
        devices = {t.device.type for t in inputs} | {args[i].device.type for i in self.const_idx}
        target = opts["target"] or ("cuda" if "cuda" in devices else "cpu")
        for i, t in zip(self.input_idx, inputs):
            name = self.placeholder_names[i]
            if _compile.dtype_name(t.dtype) is None:
                raise _Unsupported(f"input {name} has dtype {t.dtype} (aotc's inputs are float32, float16, "
                                   "bfloat16, int64, int32, bool)")
            if any(d == 0 for d in t.shape):
                raise _Unsupported(f"input {name} is empty (shape {tuple(t.shape)})")
            if t.dim() > 8:
                raise _Unsupported(f"input {name} has {t.dim()} dimensions (aotc takes at most 8)")
            if t.device.type != target:
                raise _Unsupported(f"input {name} is on {t.device}, but the target is {target}")

        threads = opts["threads"] or max(1, torch.get_num_threads())
        # A CPU library is built for the threads it runs on (aotc --cpu-threads: its kernel
        # choices), so the thread count is part of its cache key.
        cpu_threads = threads if target == "cpu" else None
        key = self._cache_key(args, target, cpu_threads, torch)
        cache_dir = opts["cache_dir"] or default_cache_dir()
        path = os.path.join(cache_dir, key + ".so")
        failed = os.path.join(cache_dir, key + ".fail")
        with _LOADED_LOCK:
            model = _LOADED.get((path, threads))
        if model is not None:
            logger.info("aotc: graph %d: cache hit %s (loaded)", self.number, path)
            return model
        model = None
        if os.path.isfile(path):
            logger.info("aotc: graph %d: cache hit %s", self.number, path)
            try:
                model = self._load(path, threads)
            except _Unsupported as e:  # damaged by hand, say: compiled again below, replacing it
                logger.warning("aotc: graph %d: %s; compiling it again", self.number, e)
        if model is not None:
            pass
        elif os.path.isfile(failed):
            with open(failed, encoding="utf-8", errors="replace") as f:
                message = f.read()
            logger.info("aotc: graph %d: cache hit %s (not compilable)", self.number, failed)
            raise _Unsupported(_first_line(message), _compile.unsupported_ops(message))
        else:
            os.makedirs(cache_dir, exist_ok=True)
            start = time.monotonic()
            script, specs = self._to_torchscript(args, torch, on_cpu=target == "cuda")
            tmp = os.path.join(cache_dir, f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp.so")
            try:
                _compile.run_aotc(script, specs, tmp, display_name=f"graph{self.number}", target=target,
                                  precision=opts["precision"],
                                  extra_args=("--cpu-threads", str(cpu_threads)) if cpu_threads else ())
                os.replace(tmp, path)
            except CompileError as e:
                ops = _compile.unsupported_ops(e.message)
                if ops:  # a lasting verdict (not, say, a full disk): later processes need not ask again
                    _atomic_write_text(failed, e.message)
                raise _Unsupported(_first_line(e.message), ops) from None
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            logger.info("aotc: graph %d: compiled %s in %.1f s", self.number, path, time.monotonic() - start)
            model = self._load(path, threads)
        with _LOADED_LOCK:
            model = _LOADED.setdefault((path, threads), model)
        return model

    @staticmethod
    def _load(path, threads):
        from ._runtime import load

        try:
            return load(path, threads=threads)
        except (OSError, ValueError, RuntimeError) as e:  # AotcError is a RuntimeError
            raise _Unsupported(f"cannot load {path}: {e}") from None

    def _cache_key(self, args, target, cpu_threads, torch):
        from ._paths import compiler_fingerprint

        h = hashlib.sha256()

        def text(s):
            b = str(s).encode("utf-8", "surrogatepass")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)

        text(_CACHE_FORMAT)
        text(torch.__version__)
        text(compiler_fingerprint())
        text(f"target={target} precision={self.opts['precision']} cpu_threads={cpu_threads}")
        text(self.gm.code)
        for i, (kind, name) in enumerate(zip(self.kinds, self.placeholder_names)):
            a = args[i]
            text(f"{i} {kind} {name}")
            if kind == "input":
                text(f"{a.dtype} {tuple(a.shape)}")
            elif kind == "const":
                _hash_tensor(h, text, a)
            else:
                text(repr(_value_key(a)))
        # tensors the graph holds itself (dynamo with inline_inbuilt_nn_modules off: the modules'
        # parameters; lifted constants)
        state = self.gm.state_dict(keep_vars=True)
        for name in sorted(state):
            text(f"state {name}")
            _hash_tensor(h, text, state[name])
        for node in self.gm.graph.nodes:
            if node.op == "get_attr" and node.target not in state:
                value = _get_attr(self.gm, node.target)
                text(f"attr {node.target}")
                if isinstance(value, torch.Tensor):
                    _hash_tensor(h, text, value)
                else:
                    text(type(value).__qualname__)
        return h.hexdigest()[:40]

    def _to_torchscript(self, args, torch, on_cpu=False):
        """A module whose forward takes the library's inputs, holds the frozen constants as
        buffers and calls the GraphModule; traced (torch.jit.trace) on this call's tensors.

        on_cpu (target cuda): aotc reads TorchScript with a CPU-only LibTorch, so the module is
        traced on CPU copies of the tensors, from a copy of the graph whose device arguments
        (torch.arange(..., device='cuda'), .to('cuda'), ...) say cpu."""
        gm = self.gm
        if on_cpu:
            gm = _graph_on_cpu(gm, torch)
            args = [a.detach().cpu() if isinstance(a, torch.Tensor) else a for a in args]
        kinds, input_idx = self.kinds, self.input_idx
        names = [self.names[i] for i in input_idx]
        scalar = {i for i in input_idx if args[i].dim() == 0}
        values = {i: _plain_value(args[i], torch) for i in self.value_idx}
        lib_outputs = self.lib_outputs

        class GraphInputs(torch.nn.Module):
            def __init__(self, gm):
                super().__init__()
                self.gm = gm
                for i in range(len(kinds)):
                    if kinds[i] == "const":
                        self.register_buffer(f"const{i}", args[i].detach())
                    elif kinds[i] == "value" and isinstance(values[i], torch.Tensor):
                        self.register_buffer(f"const{i}", values[i])

            def run(self, *inputs):
                it = iter(inputs)
                full = []
                for i, kind in enumerate(kinds):
                    if kind == "input":
                        t = next(it)
                        full.append(t.reshape(()) if i in scalar else t)
                    elif kind == "const" or isinstance(values[i], torch.Tensor):
                        full.append(getattr(self, f"const{i}"))
                    else:
                        full.append(values[i])
                out = self.gm(*full)
                if not isinstance(out, (tuple, list)):
                    out = (out,)
                return tuple(out[k] for k in lib_outputs)

        namespace = {}
        exec(f"def forward(self, {', '.join(names)}):\n    return self.run({', '.join(names)})\n",  # noqa: S102
             namespace)
        GraphInputs.forward = namespace["forward"]
        examples = tuple(args[i].detach().reshape(1) if i in scalar else args[i].detach().contiguous()
                         for i in input_idx)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                script = torch.jit.trace(GraphInputs(gm).eval(), examples, check_trace=False)
        except Exception as e:  # noqa: BLE001 (whatever torch.jit.trace refuses runs eagerly)
            raise _Unsupported(f"torch.jit.trace failed: {_first_line(str(e))}") from None
        specs = [(n, tuple(t.shape), _compile.dtype_name(t.dtype)) for n, t in zip(names, examples)]
        return script, specs


# ---------------------------------------------------------------------------------------------
# helpers

def _is_fake(value):
    try:
        from torch._subclasses.fake_tensor import FakeTensor
    except ImportError:
        return False
    return isinstance(value, FakeTensor)


def _value_key(v):
    import torch

    if isinstance(v, torch.Tensor):
        return ("tensor", str(v.dtype), tuple(v.shape), v.item() if v.numel() == 1 else v.tolist())
    if isinstance(v, torch.SymInt):
        v = int(v)
    elif isinstance(v, torch.SymFloat):
        v = float(v)
    elif isinstance(v, torch.SymBool):
        v = bool(v)
    return (type(v).__name__, v)


def _plain_value(v, torch):
    if isinstance(v, torch.Tensor):
        return v.detach().clone()
    if isinstance(v, torch.SymInt):
        return int(v)
    if isinstance(v, torch.SymFloat):
        return float(v)
    if isinstance(v, torch.SymBool):
        return bool(v)
    return v


def _graph_on_cpu(gm, torch):
    """A GraphModule like gm whose device arguments and tensor attributes are on the CPU (gm
    itself is left as it is)."""
    import copy

    def cpu(value):
        if isinstance(value, torch.device):
            return torch.device("cpu") if value.type == "cuda" else value
        if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
            return "cpu"
        if isinstance(value, tuple):
            return tuple(cpu(v) for v in value)
        if isinstance(value, list):
            return [cpu(v) for v in value]
        if isinstance(value, dict):
            return {k: cpu(v) for k, v in value.items()}
        return value

    graph = copy.deepcopy(gm.graph)
    for node in graph.nodes:
        if node.op in ("call_function", "call_method"):
            node.args = cpu(node.args)
            node.kwargs = cpu(node.kwargs)
    root = torch.nn.Module()
    for node in graph.nodes:
        if node.op == "get_attr":
            value = _get_attr(gm, node.target)
            if isinstance(value, torch.Tensor):
                value = value.detach().cpu()
            elif isinstance(value, torch.nn.Module):
                value = copy.deepcopy(value).cpu()
            *path, last = node.target.split(".")
            owner = root
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, torch.nn.Module())
                owner = getattr(owner, part)
            if isinstance(value, torch.nn.Module):
                owner.add_module(last, value)
            elif isinstance(value, torch.Tensor):
                owner.register_buffer(last, value)
            else:
                setattr(owner, last, value)
    for name, module in gm.named_children():  # call_module targets
        if not hasattr(root, name):
            root.add_module(name, copy.deepcopy(module).cpu())
    return torch.fx.GraphModule(root, graph)


def _hash_tensor(h, text, t):
    import torch

    t = t.detach()
    text(f"{t.dtype} {tuple(t.shape)}")
    if t.numel() == 0:
        return
    flat = t.reshape(-1).contiguous().cpu()
    if t.dtype != torch.uint8:
        flat = flat.view(torch.uint8)
    h.update(memoryview(flat.numpy()))


def _get_attr(module, target):
    try:
        return operator.attrgetter(target)(module)
    except AttributeError:
        return None


_INPLACE_OPERATORS = {operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                      operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift, operator.imatmul}
_DROPOUTS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
             "feature_dropout"}


def _training_or_mutation(gm, placeholders):
    """Why the graph must run eagerly to keep eager's meaning, or None: it changes one of its
    inputs (or a module's buffer) in place, which a library cannot do to the caller's tensors,
    or it runs BatchNorm or dropout in training mode (running statistics updated, random masks)."""
    def arg(node, index, name, default):
        if name in node.kwargs:
            return node.kwargs[name]
        return node.args[index] if len(node.args) > index else default

    for node in gm.graph.nodes:
        name = getattr(node.target, "__name__", "") if node.op == "call_function" else ""
        if name == "batch_norm" and arg(node, 5, "training", False) is True:
            return "it runs BatchNorm in training mode (call model.eval())"
        if name in _DROPOUTS and arg(node, 2, "training" if "train" not in node.kwargs else "train", True) is True \
                and arg(node, 1, "p", 0.5) != 0:
            return "it runs dropout in training mode (call model.eval())"
    for node in gm.graph.nodes:
        first = node.args[0] if node.args else None
        if first not in placeholders:
            continue
        if node.op == "call_method" and node.target.endswith("_") and not node.target.endswith("__"):
            return f"it changes its input {first.name} in place ({node.target}), which a library cannot do"
        if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
            return f"it changes its input {first.name} in place ({node.target.__name__}), which a library cannot do"
    return None


def _user_stacklevel():
    """warnings.warn's stacklevel, from the caller of the caller, of the first frame outside
    aotc and torch (the user's code that the compiled graph came from)."""
    import sys

    import torch

    skip = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def _op_count(gm):
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def _first_line(message):
    lines = [line for line in str(message).splitlines() if line.strip()]
    return lines[0].strip() if lines else str(message)


def _atomic_write_text(path, text):
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)
