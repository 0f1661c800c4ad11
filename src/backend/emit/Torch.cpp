// The PyTorch target (`coconetc compile --target torch`): beside the CUDA output, a Python package
// that pip builds against the installed torch with CMake. NAME_torch.cpp registers the operator
// torch.ops.coconet.NAME (TORCH_LIBRARY_FRAGMENT; its CUDA kernel checks every tensor and runs the
// program on torch's current stream) and the communicator operators; coconet_NAME.py loads it,
// registers its fake implementation (shapes for torch.compile), makes one NCCL communicator per
// process group and reads the sizes from the tensors' shapes; setup.py and pyproject.toml build it.
#include <algorithm>
#include <charconv>
#include <set>
#include <system_error>

#include "backend/emit/TorchAutograd.h"
#include "backend/emit/TorchPackage.h"

namespace coconet::backend::detail {

const char* atType(DType t) {
  switch (t) {
    case DType::F16: return "at::kHalf";
    case DType::BF16: return "at::kBFloat16";
    case DType::F32: return "at::kFloat";
    case DType::F64: return "at::kDouble";
    case DType::I8: return "at::kChar";
    case DType::I32: return "at::kInt";
    case DType::I64: return "at::kLong";
    case DType::U8: return "at::kByte";
    case DType::Bool: return "at::kBool";
    default: return "at::kFloat";
  }
}

const char* pyType(DType t) {
  switch (t) {
    case DType::F16: return "torch.float16";
    case DType::BF16: return "torch.bfloat16";
    case DType::F32: return "torch.float32";
    case DType::F64: return "torch.float64";
    case DType::I8: return "torch.int8";
    case DType::I32: return "torch.int32";
    case DType::I64: return "torch.int64";
    case DType::U8: return "torch.uint8";
    case DType::Bool: return "torch.bool";
    default: return "torch.float32";
  }
}

// A program name as a Python identifier and schema argument: '.' (an inner stage's name, as a
// backward's saved value h.x) becomes '_'; Python's keywords and the wrapper's own keyword
// arguments get a trailing underscore.
std::string pyIdent(const std::string& name) {
  std::string n = name;
  std::replace(n.begin(), n.end(), '.', '_');
  static const std::set<std::string> taken = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else",
      "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
      "return", "try", "while", "with", "yield", "torch", "dist", "run_seed", "group", "handle", "sizes", "process_group", "self",
      // the names the function and the fake implementation use besides their parameters
      "ranks", "s", "communicator", "close", "local_shape", "Optimizer", "Module", "SIZES", "dict", "zip", "int", "str", "TypeError",
      "ValueError", "_sizes", "_groups", "_handles", "rank", "local_start", "_block", "min"};
  return taken.count(n) ? n + "_" : n;
}

// A scalar parameter's default as a Python literal ("None" where it has none).
std::string pyDefault(const Param& p) {
  if (!p.value) return "None";
  if (p.dtype == DType::Bool) return *p.value != 0 ? "True" : "False";
  if (ast::isInteger(p.dtype)) return std::to_string(p.ivalue);
  // the shortest text that reads back as the same double (0.1, not 0.10000000000000001)
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *p.value);
  std::string text(buf, ec == std::errc() ? end : buf);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // a float stays a float ("inf", "nan": below)
  if (text == "inf" || text == "-inf") return text[0] == '-' ? "-float(\"inf\")" : "float(\"inf\")";
  if (text == "nan" || text == "-nan") return "float(\"nan\")";
  return text;
}

// A size expression as Python over the sizes dict `s` and the group's rank count `P`.
std::string py(const SizeExpr& e) {
  static const SizeExpr::Spelling spelling{[](const std::string& n) { return n == "world.size" ? std::string("P") : "s[\"" + n + "\"]"; },
                                           [](int64_t c) { return std::to_string(c); },
                                           [](const std::string& a, const std::string& b) { return "(" + a + " + " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "(" + a + " * " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "(" + a + " // " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "(" + a + " % " + b + ")"; }};
  return e.spell(spelling);
}

TorchPackage::TorchPackage(const ir::Program& p, const std::string& cls, const CompileOptions& o, std::string cInterface)
    : p_(p), cls_(cls), o_(o), cInterface(std::move(cInterface)) {
  N = p_.name;
  mod = "coconet_" + cls_;
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) ts.push_back({st.name, pyIdent(st.name), "in", st.type});
  for (auto& st : p_.states) ts.push_back({st.name, pyIdent(st.name), "state", st.type});
  for (size_t i = 0; i < p_.outputs.size(); ++i)
    ts.push_back({p_.outputNames[i], pyIdent(p_.outputNames[i]), "out", p_.stages[p_.outputs[i]].type});
  for (auto& prm : p_.params) (prm.isSize ? sizes : scalars).push_back(&prm);
  for (auto& t : ts) nOut += t.role == "out";
  findOptimizerRoles();

  // ---- The schema: handle, sizes, tensors (states mutable), scalars, seed -> outputs ----
  schema = cls_ + "(int handle, int[] sizes";
  char alias = 'a';
  for (auto& t : ts) {
    if (t.role == "out") continue;
    schema += std::string(", Tensor") + (t.role == "state" ? std::string("(") + alias++ + "!)" : "") + " " + t.arg;
  }
  for (auto* p : scalars) schema += std::string(", ") + scalarSchema(*p) + " " + pyIdent(p->name);
  schema += ", int run_seed) -> ";
  if (nOut == 1)
    schema += "Tensor";
  else {
    schema += "(";
    for (int k = 0; k < nOut; ++k) schema += k ? ", Tensor" : "Tensor";
    schema += ")";
  }
}

// An optimizer: one input (the gradient), states, no outputs. The parameter is the state no stage
// reads (the model's weights the program writes, as adam's w16), else the one state of the
// gradient's type; a master copy is a state whose new value the parameter's is, through casts and
// all-gathers (adam's w: `update w16 = f16(w)`); the step is the integer scalar with no default.
void TorchPackage::findOptimizerRoles() {
  std::vector<const ir::Stage*> inputs;
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) inputs.push_back(&st);
  if (inputs.size() != 1 || p_.states.empty() || nOut != 0) return;
  grad = inputs[0]->name;
  std::vector<const ir::StateInfo*> unread, sameType;
  for (auto& st : p_.states) {
    bool read = false;
    for (auto& s : p_.stages)
      for (int o : s.operands) read |= o == st.entry;
    if (!read) unread.push_back(&st);
    if (st.type.dtype == inputs[0]->type.dtype && st.type.shape == inputs[0]->type.shape) sameType.push_back(&st);
  }
  const ir::StateInfo* pr = unread.size() == 1 ? unread[0] : sameType.size() == 1 ? sameType[0] : nullptr;
  if (!pr) return;
  param = pr->name;
  // the parameter's new value, back through all-gathers and single-operand casts
  int e = pr->exit;
  for (;;) {
    const ir::Stage& s = p_.stages[e];
    const bool cast = s.kind == StageKind::Compute && s.operands.size() == 1 && s.expr.nodes.size() <= 2 &&
                      s.expr.nodes[0].op == EOp::Operand && (s.expr.nodes.size() == 1 || s.expr.nodes[1].op == EOp::Cast);
    if (s.kind != StageKind::AllGather && !cast) break;
    e = s.operands[0];
  }
  for (auto& st : p_.states)
    if (st.name != param && st.exit == e) masters.insert(st.name);
  for (auto* prm : scalars)
    if (ast::isInteger(prm->dtype) && !prm->value) step = prm->name;
  elementwise = true;
  for (auto& s : p_.stages) {
    const bool kind = s.kind == StageKind::Input || s.kind == StageKind::State || s.kind == StageKind::Compute ||
                      s.kind == StageKind::AllReduce || s.kind == StageKind::ReduceScatter || s.kind == StageKind::AllGather ||
                      s.kind == StageKind::Broadcast;
    elementwise &= kind && s.type.rank() <= 1;  // (rank 0: scalar arithmetic, such as bias corrections)
  }
}

// coconet_NAME.Optimizer: torch.optim.Optimizer over the program, one call per parameter.
std::string TorchPackage::optimizerClass() const {
  if (param.empty()) return "";
  std::ostringstream y;
  y << "\n\n# The optimizer: the parameter is '" << param << "', its gradient '" << grad << "'"
    << (step.empty() ? "" : ", the step '" + step + "'") << ".\n_OPT_GRAD = \"" << grad << "\"\n_OPT_PARAM = \"" << param
    << "\"\n_OPT_STEP = " << (step.empty() ? "None" : "\"" + pyIdent(step) + "\"") << "\n_OPT_MASTERS = (";
  for (auto& m : masters) y << "\"" << m << "\", ";
  y << ")\n_OPT_STATES = {";
  for (auto& st : p_.states)
    if (st.name != param) y << "\"" << st.name << "\": " << pyType(st.type.dtype) << ", ";
  y << "}\n_OPT_HYPER = (";
  for (auto* prm : scalars)
    if (prm->name != step) y << "\"" << pyIdent(prm->name) << "\", ";
  std::string dtype;
  for (auto& t : ts)
    if (t.name == param) dtype = pyType(t.type.dtype);
  y << ")\n_OPT_DTYPE = " << dtype << "\n\n\nclass Optimizer(torch.optim.Optimizer):\n"
    << "    \"\"\"torch.optim.Optimizer that runs " << N << " on the parameters: each is '" << param << "', its gradient '" << grad << "'";
  if (!masters.empty()) {
    y << "; ";
    for (auto& m : masters) y << "'" << m << "' ";
    y << "starts as the parameter";
  }
  y << ", the other states at zero" << (step.empty() ? "" : "; '" + step + "' is the step, from 1") << ".\n";
  if (elementwise)
    y << "    flat=True (the update is element by element): a param group's parameters become views of one buffer\n"
      << "    (zero-padded so that the ranks' blocks are even) and their gradients views of another, and one call\n"
      << "    updates the group; every parameter of the group is updated at each step (one without a gradient as if\n"
      << "    it were zero), and zero_grad() zeroes the gradient buffer. flat=False: one call per parameter with a\n"
      << "    gradient, as torch.optim does.\n";
  y << "    Hyperparameters are param-group options (LR schedulers change 'lr'); state_dict() holds the states as\n"
    << "    this rank keeps them (a sliced state: its block; flat: the group's, under its first parameter) in their\n"
    << "    own dtypes, and load_state_dict() puts them back exactly.\"\"\"\n\n"
    << "    def __init__(self, params";
  for (auto* prm : scalars) {
    if (prm->name == step) continue;
    y << ", " << pyIdent(prm->name) << "=" << pyDefault(*prm);
  }
  y << ", *, group=None" << (elementwise ? ", flat=True" : "") << "):\n        defaults = dict(";
  bool first = true;
  for (auto* prm : scalars)
    if (prm->name != step) y << (first ? "" : ", ") << pyIdent(prm->name) << "=" << pyIdent(prm->name), first = false;
  y << ")\n        for k, v in defaults.items():\n            if v is None:\n"
    << "                raise TypeError(\"" << N << ": hyperparameter '\" + k + \"' has no default; pass it\")\n"
    << "        self.group, self.flat = group, " << (elementwise ? "flat" : "False") << "\n"
    << "        self._flat = {}  # param group index -> (parameter buffer, gradient buffer, gradient views)\n"
    << "        self._exact = None\n        super().__init__(params, defaults)\n"
    << "        self.register_load_state_dict_pre_hook(Optimizer._keep_exact)\n"
    << "        self.register_load_state_dict_post_hook(Optimizer._restore_exact)\n";
  y << optimizerMethods();
  return y.str();
}

// The Optimizer's methods: flat buffers, zero_grad, states, step, and the state_dict hooks.
std::string TorchPackage::optimizerMethods() const {
  std::ostringstream y;
  y << R"PY(
    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if self.flat:
            self._make_flat(len(self.param_groups) - 1)

    def _make_flat(self, gi):
        """Param group gi's parameters become views of one buffer, zero-padded so that each rank's block
        is a whole number of 64-element units (aligned vector loads), their gradients views of another."""
        params = self.param_groups[gi]["params"]
        for i, p in enumerate(params):
            if p.dtype != _OPT_DTYPE or not p.is_cuda:
                raise ValueError(")PY"
    << N << R"PY(: parameter %d of param group %d is %s on %s; the program's '%s' is %s on a CUDA device"
                                 " (create the optimizer after moving the model to the GPU)"
                                 % (i, gi, p.dtype, p.device, _OPT_PARAM, _OPT_DTYPE))
        ranks = dist.get_world_size(self.group) if dist.is_available() and dist.is_initialized() else 1
        unit = 64 * ranks
        n = sum(p.numel() for p in params)
        buf = params[0].new_zeros((n + unit - 1) // unit * unit)
        grads = torch.zeros_like(buf)
        views, off = [], 0
        with torch.no_grad():
            for p in params:
                k = p.numel()
                buf[off:off + k].copy_(p.reshape(-1))
                p.data = buf[off:off + k].view_as(p)
                gv = grads[off:off + k].view_as(p)
                if p.grad is not None:
                    gv.copy_(p.grad)
                p.grad = gv
                views.append(gv)
                off += k
        self._flat[gi] = (buf, grads, views)

    def zero_grad(self, set_to_none=True):
        """flat: zeroes each group's gradient buffer (the gradients stay its views, and backward adds
        into them); otherwise torch.optim.Optimizer.zero_grad."""
        if not self.flat:
            return super().zero_grad(set_to_none)
        for gi, (_, grads, views) in self._flat.items():
            grads.zero_()
            for p, gv in zip(self.param_groups[gi]["params"], views):
                p.grad = gv

    def _new_state(self, p, rank, ranks):
        flat = p.detach().reshape(-1)
        s = dict(zip(SIZES, _sizes({}, {_OPT_GRAD: flat}, ranks)))
        state = {"step": 0}
        for name, dtype in _OPT_STATES.items():
            shape = local_shape(name, s, ranks, rank)
            if name in _OPT_MASTERS:
                n = 1
                for d in shape:
                    n *= d
                start = local_start(name, s, ranks, rank) if n < flat.numel() else 0  # (a sliced master: this rank's block)
                state[name] = flat[start:start + n].to(dtype).reshape(shape).clone()
            else:
                state[name] = torch.zeros(shape, dtype=dtype, device=p.device)
        return state

    def _run(self, g, state, gradient, parameter):
        state["step"] += 1
        kw = {k: g[k] for k in _OPT_HYPER}
        if _OPT_STEP is not None:
            kw[_OPT_STEP] = state["step"]
        tensors = dict(state)
        tensors[_OPT_GRAD] = gradient
        tensors[_OPT_PARAM] = parameter
        )PY"
    << pyIdent(cls_) << "(";
  bool first = true;
  for (auto& t : ts)
    if (t.role != "out") y << (first ? "" : ", ") << "tensors[\"" << t.name << "\"]", first = false;
  y << R"PY(, group=self.group, **kw)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        _, rank, ranks = communicator(self.group)
        for gi, g in enumerate(self.param_groups):
            params = g["params"]
            if self.flat:
                buf, grads, views = self._flat[gi]
                if all(p.grad is None for p in params):
                    continue
                # gradients that backward put elsewhere (after the model's zero_grad set them to None)
                moved = [(gv, p.grad) for p, gv in zip(params, views) if p.grad is not None and p.grad.data_ptr() != gv.data_ptr()]
                if moved:
                    torch._foreach_copy_([a for a, _ in moved], [b for _, b in moved])
                for p, gv in zip(params, views):
                    if p.grad is None:
                        gv.zero_()
                    p.grad = gv
                state = self.state[params[0]]
                if not state:
                    state.update(self._new_state(buf, rank, ranks))
                self._run(g, state, grads, buf)
                continue
            for p in params:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(self._new_state(p, rank, ranks))
                self._run(g, state, p.grad.reshape(-1), p.data.view(-1))
        return loss

)PY"
    << "    # torch.optim.Optimizer.load_state_dict casts floating state to the parameter's dtype; the states\n"
    << "    # keep the program's (f32 moments of an f16 parameter): the values are kept before and put back after.\n"
    << "    @staticmethod\n    def _keep_exact(optimizer, state_dict):\n"
    << "        ids = [i for g in state_dict[\"param_groups\"] for i in g[\"params\"]]\n"
    << "        optimizer._exact = [state_dict[\"state\"].get(i) for i in ids]\n\n"
    << "    @staticmethod\n    def _restore_exact(optimizer):\n"
    << "        params = [p for g in optimizer.param_groups for p in g[\"params\"]]\n"
    << "        for p, saved in zip(params, optimizer._exact or []):\n            if saved is None:\n                continue\n"
    << "            for k, v in saved.items():\n                if k in _OPT_STATES:\n"
    << "                    optimizer.state[p][k] = v.detach().to(device=p.device, dtype=_OPT_STATES[k]).clone()\n"
    << "        optimizer._exact = None\n";
  return y.str();
}

// coconet_NAME.Module: torch.nn.Module over a program with outputs. The inputs given to the
// constructor are its parameters, the states its buffers; forward() takes the other inputs.
std::string TorchPackage::moduleClass() const {
  if (nOut == 0) return "";
  std::ostringstream y;
  y << "\n\n_INPUTS = (";
  for (auto& t : ts)
    if (t.role == "in") y << "\"" << t.arg << "\", ";
  y << ")\n_STATES = (";
  for (auto& t : ts)
    if (t.role == "state") y << "\"" << t.arg << "\", ";
  y << ")\n# The function's keyword arguments a Module keeps as settings: scalars and sizes.\n_SCALARS = (";
  for (auto* prm : scalars) y << "\"" << pyIdent(prm->name) << "\", ";
  for (auto* prm : sizes) y << "\"" << prm->name << "\", ";
  y << ")\n\n\nclass Module(torch.nn.Module):\n"
    << "    \"\"\"torch.nn.Module over " << N << ": the inputs given to the constructor (this rank's storage) are its\n"
    << "    parameters, the states its buffers, the scalars and sizes given there its settings; forward() takes the other\n"
    << "    inputs, in the program's order or by name, and returns the outputs. Gradients flow through the backward\n"
    << "    program's package (coconet_" << cls_ << "_backward) where it is installed; without it, forward() with gradients\n"
    << "    enabled and a tensor that requires them raises RuntimeError.\"\"\"\n\n"
    << "    def __init__(self, *, group=None, run_seed=0, **given):\n        super().__init__()\n"
    << "        self.group, self.run_seed, self.settings = group, run_seed, {}\n        for k, v in given.items():\n"
    << "            if k in _INPUTS:\n                self.register_parameter(k, torch.nn.Parameter(v))\n"
    << "            elif k in _STATES:\n                self.register_buffer(k, v)\n"
    << "            elif k in _SCALARS:\n                self.settings[k] = v\n            else:\n"
    << "                raise TypeError(\"" << N << ": no input, state, scalar or size named '\" + k + \"'\")\n"
    << "        for k in _STATES:\n            if k not in given:\n"
    << "                raise TypeError(\"" << N << ": state '\" + k + \"' must be given (it is a buffer of the module)\")\n\n"
    << "    def forward(self, *args, **kwargs):\n"
    << "        free = [k for k in _INPUTS if k not in self._parameters]\n"
    << "        if len(args) > len(free):\n"
    << "            raise TypeError(\"" << N
    << ": forward() takes \" + str(len(free)) + \" inputs (\" + \", \".join(free) + \"), got \" + str(len(args)))\n"
    << "        tensors = dict(zip(free, args))\n        tensors.update({k: v for k, v in kwargs.items() if k in free})\n"
    << "        scalars = dict(self.settings)\n        scalars.update({k: v for k, v in kwargs.items() if k in _SCALARS})\n"
    << "        for k in free:\n            if k not in tensors:\n"
    << "                raise TypeError(\"" << N << ": forward() needs input '\" + k + \"'\")\n"
    << "        tensors.update(self._parameters)\n        tensors.update(self._buffers)\n"
    << "        if _bw is None and torch.is_grad_enabled() and any(t.requires_grad for t in tensors.values()):\n"
    << "            raise RuntimeError(\"" << N << " has no backward program installed (coconetc compile --backward --target\"\n"
    << "                               \" torch; pip install it): call it under torch.no_grad() (or with tensors that\"\n"
    << "                               \" do not require grad)\")\n"
    << "        return " << pyIdent(cls_) << "(";
  bool first = true;
  for (auto& t : ts)
    if (t.role != "out") y << (first ? "" : ", ") << "tensors[\"" << t.arg << "\"]", first = false;
  y << ", group=self.group, run_seed=self.run_seed, **scalars)\n";
  return y.str();
}

std::string TorchPackage::moduleHead() const {
  // ---- coconet_NAME.py ----
  std::ostringstream y;
  y << "\"\"\"" << mod << ": the coconetc program " << N << " as a PyTorch operator, torch.ops.coconet." << cls_ << ".\n\n"
    << "Generated by coconetc " << COCONETC_VERSION << " from " << commentText(o_.sourcePath)
    << (o_.schedulePath.empty() ? "" : " with schedule " + commentText(o_.schedulePath)) << ". Do not edit.\n\"\"\"\n"
    << "import glob\nimport os\n\nimport torch\nimport torch.distributed as dist\n\n"
    << "_here = os.path.dirname(os.path.abspath(__file__))\n"
    << "_libs = sorted(glob.glob(os.path.join(_here, \"_" << mod << "*.so\")))\nif not _libs:\n"
    << "    raise ImportError(\"" << mod << ": the operator library _" << mod
    << "*.so is not beside \" + __file__ + \" (install the package with pip)\")\n"
    << "torch.ops.load_library(_libs[0])\n\n"
    << "SIZES = (";
  for (auto* p : sizes) y << "\"" << p->name << "\", ";
  y << ")\n# Bound at compile time (-D): the only value each takes.\n_BOUND = {";
  for (auto* p : sizes)
    if (p->value) y << "\"" << p->name << "\": " << p->ivalue << ", ";
  y << "}\n# Where each size is read from a tensor: (tensor, dimension, whether that dimension is sliced).\n_SIZE_FROM = {";
  for (auto* p : sizes) {
    const TorchTensor* best = nullptr;
    int bestDim = -1;
    bool bestSliced = true;
    for (auto& t : ts) {
      if (t.role == "out") continue;
      for (int k = 0; k < t.type.rank(); ++k) {
        if (t.type.shape[k] != SizeExpr::symbol(p->name)) continue;
        const bool sl = t.type.layout.kind == Layout::Sliced && t.type.layout.dim == k;
        if (!best || (bestSliced && !sl)) best = &t, bestDim = k, bestSliced = sl;
      }
    }
    if (best) y << "\"" << p->name << "\": (\"" << best->arg << "\", " << bestDim << ", " << (bestSliced ? "True" : "False") << "), ";
  }
  y << "}\n# The number of dimensions of each tensor argument.\n_RANKS = {";
  for (auto& t : ts)
    if (t.role != "out") y << "\"" << t.arg << "\": " << t.type.rank() << ", ";
  // the program names of the operator's tensors and of the outputs (the autograd formula pairs a
  // backward program's d_NAME with them)
  y << "}\n_TENSOR_NAMES = (";
  for (auto& t : ts)
    if (t.role != "out") y << "\"" << t.name << "\", ";
  y << ")\n_OUTPUT_NAMES = (";
  for (auto& t : ts)
    if (t.role == "out") y << "\"" << t.name << "\", ";
  y << ")\n# A backward program's inputs that are forward values (the forward compiled with --saving returns them).\n_SAVED = (";
  for (auto& n : p_.savedInputs) y << "\"" << n << "\", ";
  y << ")\n_handles = {}  # process group (None: one rank) -> (handle, rank, ranks)\n_groups = {}  # handle -> (rank, ranks, group)\n\n\n"
    << "def communicator(group=None):\n"
    << "    \"\"\"The NCCL communicator of the process group (the default group, or one rank where\n"
    << "    torch.distributed is not initialized): made once per group, its id broadcast over the group.\n"
    << "    Returns (handle, rank, ranks).\"\"\"\n"
    << "    if group is None and dist.is_available() and dist.is_initialized():\n        group = dist.group.WORLD\n"
    << "    if group in _handles:\n        return _handles[group]\n"
    << "    if group is None:\n        rank, n = 0, 1\n        uid = torch.ops.coconet." << cls_ << "_unique_id()\n"
    << "    else:\n        rank, n = dist.get_rank(group), dist.get_world_size(group)\n"
    << "        obj = [torch.ops.coconet." << cls_ << "_unique_id().tolist() if rank == 0 else None]\n"
    << "        dist.broadcast_object_list(obj, src=dist.get_global_rank(group, 0), group=group)\n"
    << "        uid = torch.tensor(obj[0], dtype=torch.uint8)\n"
    << "    handle = torch.ops.coconet." << cls_ << "_create(uid, rank, n)\n"
    << "    _handles[group] = (handle, rank, n)\n    _groups[handle] = (rank, n, group)\n    return _handles[group]\n\n\n"
    << "def close(group=None):\n    \"\"\"Ends the communicator of the group (communicator() makes a new one when called again).\"\"\"\n"
    << "    if group is None and dist.is_available() and dist.is_initialized():\n        group = dist.group.WORLD\n"
    << "    entry = _handles.pop(group, None)\n    if entry is not None:\n        _groups.pop(entry[0], None)\n"
    << "        torch.ops.coconet." << cls_ << "_destroy(entry[0])\n\n\n"
    << "def _block(n, parts, pos):\n"
    << "    \"\"\"A rank's block of a sliced dimension of n (torch.chunk's cut): (start, length).\"\"\"\n"
    << "    b = -(-n // parts)\n    start = min(n, pos * b)\n    return start, min(b, n - start)\n\n\n"
    << "def local_shape(name, sizes, ranks, rank=0):\n"
    << "    \"\"\"This rank's shape of tensor `name` (a sliced dimension: its block, uneven sizes\n"
    << "    leaving the last ranks' shorter) for the sizes (a dict).\"\"\"\n"
    << "    s, P = sizes, ranks\n";
  // (a group is a block of consecutive ranks: a rank's place in it is rank % its size)
  auto block = [](const TensorType& t) {
    const std::string n = py(t.shape[static_cast<size_t>(t.layout.dim)]), size = py(t.group->size);
    return "_block(" + n + ", " + size + ", rank % (" + size + "))";
  };
  for (auto& t : ts) {
    y << "    if name == \"" << t.name << "\":\n        return [";
    for (int k = 0; k < t.type.rank(); ++k) {
      std::string d = py(t.type.shape[k]);
      if (t.type.group && t.type.layout.kind == Layout::Sliced && t.type.layout.dim == k) d = block(t.type) + "[1]";
      y << (k ? ", " : "") << d;
    }
    y << "]\n";
  }
  y << "    raise KeyError(\"" << N << " has no tensor \" + repr(name))\n\n\n"
    << "def local_start(name, sizes, ranks, rank):\n"
    << "    \"\"\"Where this rank's block of tensor `name`, sliced along dimension 0, starts in the\n"
    << "    whole (elements); 0 for a tensor that is not.\"\"\"\n"
    << "    s, P = sizes, ranks\n";
  for (auto& t : ts) {
    if (!t.type.group || t.type.layout.kind != Layout::Sliced || t.type.layout.dim != 0) continue;
    y << "    if name == \"" << t.name << "\":\n        return " << block(t.type) << "[0]";
    for (int k = 1; k < t.type.rank(); ++k) y << " * " << py(t.type.shape[k]);
    y << "\n";
  }
  y << "    return 0\n\n\n"
    << "def _sizes(given, tensors, ranks):\n    out = []\n    for name in SIZES:\n        v = given.get(name)\n"
    << "        if v is None and name in _SIZE_FROM:\n            t, d, sliced = _SIZE_FROM[name]\n"
    << "            if tensors[t].dim() != _RANKS[t]:\n                raise RuntimeError(\"" << N
    << ": '\" + t + \"' must have a shape of \" + str(_RANKS[t]) + \" dimensions; it has shape \" + str(list(tensors[t].shape)))\n"
    << "            v = tensors[t].shape[d] * (ranks if sliced else 1)\n"
    << "        if v is None:\n            v = _BOUND.get(name)\n"
    << "        if v is None:\n            raise ValueError(\"" << N
    << ": size '\" + name + \"' is not a dimension of any input; pass it: \" + name + \"=...\")\n"
    << "        if name in _BOUND and v != _BOUND[name]:\n            raise ValueError(\"" << N
    << ": size '\" + name + \"' was bound to \" + str(_BOUND[name]) + \" at compile time; got \" + str(v))\n"
    << "        out.append(int(v))\n    return out\n\n\n"
    << "def _seed(run_seed):\n    \"\"\"run_seed, any integer in [-2**63, 2**64), as the operator's int64 (the same 64 bits).\"\"\"\n"
    << "    v = int(run_seed)\n    if not -(1 << 63) <= v < (1 << 64):\n        raise ValueError(\"" << N
    << ": run_seed \" + str(v) + \" does not fit 64 bits\")\n"
    << "    return v - (1 << 64) if v >= (1 << 63) else v\n\n\n";
  return y.str();
}

std::string TorchPackage::moduleFunction() const {
  std::ostringstream y;
  // fake
  y << "@torch.library.register_fake(\"coconet::" << cls_ << "\")\ndef _fake(handle, sizes";
  for (auto& t : ts)
    if (t.role != "out") y << ", " << t.arg;
  for (auto* p : scalars) y << ", " << pyIdent(p->name);
  y << ", run_seed):\n    rank, ranks = _groups[handle][0], _groups[handle][1]\n    s = dict(zip(SIZES, sizes))\n";
  std::string anyIn;
  for (auto& t : ts)
    if (t.role != "out" && anyIn.empty()) anyIn = t.arg;
  std::vector<std::string> outs;
  for (auto& t : ts)
    if (t.role == "out")
      outs.push_back((anyIn.empty() ? "torch.empty(" : anyIn + ".new_empty(") + std::string("local_shape(\"") + t.name +
                     "\", s, ranks, rank), dtype=" + pyType(t.type.dtype) + ")");
  if (outs.empty())
    y << "    return None\n\n\n";
  else if (outs.size() == 1)
    y << "    return " << outs[0] << "\n\n\n";
  else {
    y << "    return (\n";
    for (auto& o : outs) y << "        " << o << ",\n";
    y << "    )\n\n\n";
  }
  // the function
  y << "def " << pyIdent(cls_) << "(";
  bool first = true;
  for (auto& t : ts)
    if (t.role != "out") y << (first ? "" : ", ") << t.arg, first = false;
  y << (first ? "*" : ", *");
  for (auto* p : scalars) {
    y << ", " << pyIdent(p->name) << "=" << pyDefault(*p);
  }
  for (auto* p : sizes) y << ", " << p->name << "=None";
  y << ", group=None, run_seed=0):\n    \"\"\"Runs " << N << " on torch's current stream.\n\n";
  for (auto& t : ts) y << "    " << t.role << " " << t.name << ": " << t.type.str() << "\n";
  y << "\n    Inputs and states are this rank's storage (a sliced tensor: its block); states are changed in\n"
    << "    place and the outputs returned. Sizes come from the tensors' shapes unless given. run_seed\n"
    << "    keys the random draws that name no seed (dropout without seed=).\n    \"\"\"\n";
  for (auto* p : scalars)
    if (!p->value)
      y << "    if " << pyIdent(p->name) << " is None:\n        raise TypeError(\"" << N << ": scalar '" << p->name
        << "' has no default; pass it\")\n";
  y << "    handle, _, ranks = communicator(group)\n    sizes = _sizes({";
  for (auto* p : sizes) y << "\"" << p->name << "\": " << p->name << ", ";
  y << "}, {";
  for (auto& t : ts)
    if (t.role != "out") y << "\"" << t.arg << "\": " << t.arg << ", ";
  // (a forward compiled with --saving: the values its backward reads are not the caller's)
  const int user = nOut - p_.savedOutputs;
  y << "}, ranks)\n    " << (p_.savedOutputs ? "out = " : "return ") << "torch.ops.coconet." << cls_ << "(handle, sizes";
  for (auto& t : ts)
    if (t.role != "out") y << ", " << t.arg;
  for (auto* p : scalars) y << ", " << pyIdent(p->name);
  y << ", _seed(run_seed))\n";
  if (p_.savedOutputs) y << "    return " << (user == 1 ? "out[0]" : "out[:" + std::to_string(user) + "]") << "\n";
  return y.str();
}

std::string TorchPackage::setupSource() const {
  // ---- setup.py, pyproject.toml: pip builds the operator library with CMake ----
  std::ostringstream su;
  su << "# setup.py: generated by coconetc " << COCONETC_VERSION << ". Builds _" << mod
     << " with CMake (COCONET_TORCH=ON) against the installed torch:\n"
     << "#   pip install --no-build-isolation .   (NCCL_ROOT=... to pick an NCCL; CMAKE_CUDA_ARCHITECTURES=... another GPU)\n"
     << "import os\nimport shutil\nimport subprocess\nimport sysconfig\n\nfrom setuptools import Extension, setup\n"
     << "from setuptools.command.build_ext import build_ext\n\n\n"
     << "class CMakeBuild(build_ext):\n    def build_extension(self, ext):\n        import torch.utils.cpp_extension as cpp\n\n"
     << "        src = os.path.dirname(os.path.abspath(__file__))\n        tmp = os.path.abspath(self.build_temp)\n"
     << "        os.makedirs(tmp, exist_ok=True)\n        cfg = [\n            \"cmake\", \"-S\", src, \"-B\", tmp, "
        "\"-DCOCONET_TORCH=ON\",\n"
     << "            \"-DTORCH_INCLUDE_DIRS=\" + \";\".join(cpp.include_paths()),\n"
     << "            \"-DTORCH_LIBRARY_DIRS=\" + \";\".join(cpp.library_paths()),\n"
     << "            \"-DTORCH_CXX11_ABI=\" + str(int(__import__(\"torch\")._C._GLIBCXX_USE_CXX11_ABI)),\n"
     << "            \"-DTORCH_EXT_SUFFIX=\" + sysconfig.get_config_var(\"EXT_SUFFIX\"),\n        ]\n"
     << "        nccl = os.environ.get(\"NCCL_ROOT\")\n"
     << "        if not nccl:  # torch's own NCCL: the one the process loads first\n"
     << "            try:\n                import nvidia.nccl\n\n                nccl = list(nvidia.nccl.__path__)[0]\n"
     << "            except ImportError:\n                pass\n"
     << "        if nccl:\n            cfg.append(\"-DNCCL_ROOT=\" + nccl)\n"
     << "        if os.environ.get(\"CMAKE_CUDA_ARCHITECTURES\"):\n"
     << "            cfg.append(\"-DCMAKE_CUDA_ARCHITECTURES=\" + os.environ[\"CMAKE_CUDA_ARCHITECTURES\"])\n"
     << "        subprocess.check_call(cfg)\n"
     << "        subprocess.check_call([\"cmake\", \"--build\", tmp, \"--target\", \"_" << mod << "\", \"-j\", str(os.cpu_count() or 2)])\n"
     << "        built = os.path.join(tmp, \"_" << mod << "\" + sysconfig.get_config_var(\"EXT_SUFFIX\"))\n"
     << "        os.makedirs(os.path.dirname(self.get_ext_fullpath(ext.name)), exist_ok=True)\n"
     << "        shutil.copyfile(built, self.get_ext_fullpath(ext.name))\n\n\n"
     << "setup(\n    name=\"" << mod << "\",\n    version=\"" << COCONETC_VERSION << "\",\n"
     << "    description=\"The coconetc program " << N << " as a PyTorch operator\",\n    py_modules=[\"" << mod << "\"],\n"
     << "    ext_modules=[Extension(\"_" << mod << "\", sources=[])],\n    cmdclass={\"build_ext\": CMakeBuild},\n)\n";
  return su.str();
}

std::string TorchPackage::pyproject() const {
  return "# Generated by coconetc " + std::string(COCONETC_VERSION) +
         ". Install with: pip install --no-build-isolation .\n"
         "[build-system]\nrequires = [\"setuptools>=64\", \"torch\", \"cmake>=3.24\"]\n"
         "build-backend = \"setuptools.build_meta\"\n";
}

std::string TorchPackage::readme() const {
  // ---- README.md ----
  std::ostringstream rd;
  rd << "# " << mod << "\n\nThe coconetc program `" << N << "` (" << o_.sourcePath
     << (o_.schedulePath.empty() ? "" : ", schedule " + o_.schedulePath) << ") as a PyTorch operator, generated by coconetc "
     << COCONETC_VERSION << ".\n\n## Install\n\n```sh\npip install --no-build-isolation "
     << "DIR\n```\n\n"
     << "This builds `_" << mod << "` with CMake and nvcc against the installed torch (it needs CUDA 12.8 or later, cuBLAS and\n"
     << "NCCL 2.28 or later: `NCCL_ROOT=...` picks one; `CMAKE_CUDA_ARCHITECTURES=...` another GPU than " << o_.arch
     << ").\n\n## Use\n\n```python\nimport torch\nimport " << mod << "\n\n"
     << "outputs = " << mod << "." << pyIdent(cls_) << "(";
  bool first = true;
  for (auto& t : ts)
    if (t.role != "out") rd << (first ? "" : ", ") << t.arg, first = false;
  rd << ")\n```\n\nThe operator is `torch.ops.coconet." << cls_ << "`:\n\n```\n"
     << schema << "\n```\n\n"
     << "| tensor | role | type |\n|---|---|---|\n";
  for (auto& t : ts) rd << "| `" << t.name << "` | " << t.role << " | `" << t.type.str() << "` |\n";
  rd << "\nTensors are this rank's storage (a sliced tensor: its block), on the current CUDA device, contiguous, of\n"
     << "the listed dtype; states are changed in place, outputs returned. The sizes come from the tensors' shapes\n"
     << "(or keyword arguments); a tensor of the wrong device, dtype or shape raises a RuntimeError naming it and\n"
     << "the expected value. The operator runs on torch's current stream and has a fake implementation, so\n"
     << "`torch.compile(fullgraph=True)` traces through it and a CUDA graph captures it (after one call\n"
     << "outside the capture, which sets up the communicator and buffers). Scalars are keyword arguments;\n"
     << "`run_seed` keys the random draws that name no seed.\n\n";
  if (!param.empty()) {
    std::string dtype;
    for (auto& t : ts)
      if (t.name == param) dtype = pyType(t.type.dtype);
    rd << "## Optimizer\n\n`" << mod << ".Optimizer` is a `torch.optim.Optimizer`: swap it in for the script's optimizer with\n"
       << "one line. Each parameter (of dtype `" << dtype << "`) is `" << param << "`, its gradient `" << grad << "`";
    if (!step.empty()) rd << ", the step `" << step << "` counts from 1";
    rd << "; the hyperparameters are param-group options, so LR schedulers work.\n\n```python\n"
       << "opt = " << mod << ".Optimizer(model.parameters(), lr=1e-3)\nloss.backward()\nopt.step()\nopt.zero_grad()\n```\n\n"
       << "`state_dict()` holds each parameter's states as this rank keeps them (a sliced state: its block) in\n"
       << "their own dtypes, and `load_state_dict()` puts them back exactly.\n\n";
  }
  if (nOut > 0)
    rd << "## Module\n\n`" << mod << ".Module(**given)` is a `torch.nn.Module`: the inputs given to the constructor\n"
       << "are its parameters, the states its buffers, the scalars its settings; `forward()` takes the other\n"
       << "inputs and returns the outputs.\n\n## Gradients\n\nThe operator's backward is the backward program's: install its package "
          "too,\n\n"
       << "```sh\ncoconetc compile PROGRAM.cnet --backward --target torch -o DIR_backward\n"
       << "pip install --no-build-isolation DIR_backward\n```\n\n"
       << "and `loss.backward()` runs it (it recomputes the forward from the saved inputs). Without it, the\n"
       << "operator and the Module with gradients enabled and a tensor that requires them raise\n"
       << "RuntimeError (call them under `torch.no_grad()`).\n\n";
  rd << "## Ranks\n\nLaunch one process per GPU with torchrun and initialize torch.distributed with the NCCL backend\n"
     << "before the first call; the package makes one NCCL communicator per process group (`communicator(group)`),\n"
     << "its id broadcast over the group, and `close(group)` ends it. Without torch.distributed it runs on one rank.\n\n"
     << "```sh\ntorchrun --nproc-per-node 4 train.py\n```\n";
  return rd.str();
}

std::vector<std::string> Emitter::torchFiles() const {
  return {cls_ + "_torch.cpp", "coconet_" + cls_ + ".py", "setup.py", "pyproject.toml", "README.md"};
}

void Emitter::writeTorchPackage(std::vector<std::string>& files) {
  const TorchPackage pk(p_, cls_, o_, cInterfaceDecls());
  write(cls_ + "_torch.cpp", pk.opSource(), files);
  std::vector<std::string> scalarArgs;
  for (auto* prm : pk.scalars) scalarArgs.push_back(pyIdent(prm->name));
  const std::string autograd = pk.nOut > 0 && p_.states.empty() ? torchAutogradText(cls_, scalarArgs)
                                                                : "\n\n_bw = None  # (a program with state has no backward program)\n";
  write(pk.mod + ".py", pk.moduleHead() + pk.moduleFunction() + pk.optimizerClass() + autograd + pk.moduleClass(), files);
  write("setup.py", pk.setupSource(), files);
  write("pyproject.toml", pk.pyproject(), files);
  write("README.md", pk.readme(), files);
}

}  // namespace coconet::backend::detail
