// The operator's autograd formula in coconet_NAME.py (TorchAutograd.h): its backward is the
// backward program's operator, torch.ops.coconet.NAME_backward (coconetc compile --backward
// --target torch), which takes the forward's inputs, the forward values it reads (saved: this
// operator's extra outputs where it was compiled with --saving) and the outputs' gradients (d_OUT),
// and returns the inputs' (d_IN).
#include "backend/emit/TorchAutograd.h"

#include <sstream>

namespace coconet::backend::detail {

std::string torchAutogradText(const std::string& name, const std::vector<std::string>& scalars) {
  auto tuple = [](const std::vector<std::string>& v) {
    std::string s = "(";
    for (auto& x : v) s += "\"" + x + "\", ";
    return s + ")";
  };
  std::ostringstream y;
  y << R"PY(

# Autograd: the gradients come from the backward program's package, where it is installed
# (coconetc compile PROGRAM --backward --target torch; pip install it): its operator takes this
# one's inputs, the forward values it reads (this package returns them where it was compiled with
# --saving) and the outputs' gradients, and returns the inputs' gradients.
_SCALAR_ARGS = )PY"
    << tuple(scalars) << R"PY(
try:
    import coconet_)PY"
    << name << R"PY(_backward as _bw
except ImportError:
    _bw = None


def _setup_context(ctx, inputs, output):
    n = len(_TENSOR_NAMES)
    ctx.handle, ctx.sizes = inputs[0], inputs[1]
    values = dict(zip(_TENSOR_NAMES, inputs[2:2 + n]))
    values.update(zip(_OUTPUT_NAMES, output if isinstance(output, tuple) else (output, )))
    missing = [t for t in _bw._SAVED if t not in values]
    if missing:
        raise RuntimeError(")PY"
    << name << R"PY(: its backward reads the forward values " + ", ".join(missing) + ", which this "
                           "package does not return: compile the program with --saving --target torch")
    # what the backward takes: the inputs and the saved values (outputs of the forward)
    ctx.names = [t for t in _bw._TENSOR_NAMES if t in values]
    ctx.save_for_backward(*[values[t] for t in ctx.names])
    ctx.scalars = inputs[2 + n:]  # the scalars, then run_seed


def _backward(ctx, *grads):
    given = dict(zip(ctx.names, ctx.saved_tensors))
    for k, out in enumerate(_OUTPUT_NAMES):
        if "d_" + out in _bw._TENSOR_NAMES:
            given["d_" + out] = grads[k].contiguous()
    kw = dict(zip(_SCALAR_ARGS + ("run_seed", ), ctx.scalars))
    got = _bw.)PY"
    << name << R"PY(_backward(*[given[t] for t in _bw._TENSOR_NAMES], group=_groups[ctx.handle][2], **kw)
    got = dict(zip(_bw._OUTPUT_NAMES, got if isinstance(got, tuple) else (got, )))
    return (None, None) + tuple(got.get("d_" + t) for t in _TENSOR_NAMES) + (None, ) * len(ctx.scalars)


if _bw is not None:
    torch.library.register_autograd("coconet::)PY"
    << name << R"PY(", _backward, setup_context=_setup_context)
)PY";
  return y.str();
}

}  // namespace coconet::backend::detail
