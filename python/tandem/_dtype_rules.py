"""How every collective treats each element type: the one place the dtype
rules live, for every frontend.

A frontend names its tensor's element type ("int16", "bfloat16",
"complex64") and gets back what to do; it then does it with its own array
library (numpy in tandem._arrays for TensorFlow and Keras, torch ops on the
tensor's device in tandem.torch). The rules:

* uint8, int8, int32, int64, float16, bfloat16, float32, float64, bool go
  to the engine as they are.
* Reductions: int16 and uint16 are widened to int32, uint32 to int64, and
  narrowed back (two's complement keeps Sum and Product exact modulo
  2**bits, as native arithmetic would; Min and Max are unchanged by
  widening). complex32/64/128 are reduced as (real, imaginary) pairs of
  float16/32/64, Sum and Average only. uint64 and every other type: refused.
* The engine scales floating types itself. Integer types are scaled here as
  Horovod's ScaleBuffer scales them: ``prescale_factor`` multiplies each
  rank's input, ``postscale_factor`` the result, each in float64 and
  truncated toward zero into the (widened) type. Average of integers is a
  Sum divided by the set size and truncated toward zero: exactly, by integer
  division, when no postscale factor is given (Horovod multiplies by the
  double 1/size, which gives the same quotient below 2**53 except at some
  set sizes, e.g. 49, where its product rounds just below an integer), and
  as Horovod's one float64 product by ``postscale / size`` when one is.
  Bool takes no Average and no scale factor.
* Broadcast, allgather and alltoall move bytes: a type the engine lacks
  travels as uint8 with one trailing dimension of the element size, so the
  first dimension, which allgather concatenates and alltoall's splits count,
  keeps its length.

Where the frontends knowingly differ (nothing else does), and why:

* complex32: tandem.torch reduces it as float16 pairs; numpy (hence
  tandem._arrays: TensorFlow, Keras) has no such type.
* uint16, uint32, uint64: torch has them from 2.3 on (torch 1.13 does not);
  numpy always.
* bfloat16: torch.bfloat16 in tandem.torch; ml_dtypes.bfloat16
  (TensorFlow's numpy type) in tandem._arrays, numpy having none of its own.
* Where the fix-ups run (widening, pairs, integer scaling): torch ops on the
  tensor's device in tandem.torch (a CUDA tensor is reduced by the engine on
  its GPU); numpy on the host in tandem._arrays (the TensorFlow and Keras
  frontends hand the engine host memory).
* What is refused before the engine: sparse and other non-strided tensors
  in tandem.torch; strings, resources, variants and quantized types in
  tandem.tensorflow. Each framework has its own such kinds.
"""

from tandem import _dtypes, _ops

# Types the engine reduces and moves as they are.
NATIVE = {"uint8": _dtypes.UINT8, "int8": _dtypes.INT8, "int32": _dtypes.INT32,
          "int64": _dtypes.INT64, "float16": _dtypes.FLOAT16, "bfloat16": _dtypes.BFLOAT16,
          "float32": _dtypes.FLOAT32, "float64": _dtypes.FLOAT64, "bool": _dtypes.BOOL}
WIDENED = {"int16": "int32", "uint16": "int32", "uint32": "int64"}
COMPLEX_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}
FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})
REDUCIBLE = ("uint8, int8, int16, uint16, int32, uint32, int64, float16, bfloat16, float32, "
             "float64, bool, complex64, complex128 (and torch's complex32)")


class Rule:
    """What a reduction does with one tensor.

    ``wire``: the type the engine reduces (a name); ``complex_parts``: the
    tensor travels as (real, imaginary) pairs of ``wire`` (one trailing
    dimension of 2). ``engine_op``, ``engine_prescale``,
    ``engine_postscale``: what the engine is asked to do. Done here, in the
    wire type: ``prescale`` (a float factor on this rank's input before the
    reduction), ``postscale`` (a float factor on the result), ``divide_by``
    (the set size an integer Average is divided by, exactly); each None when
    there is nothing to do. Factors are applied in float64 and truncated
    toward zero."""

    __slots__ = ("complex_parts", "divide_by", "engine_dtype", "engine_op", "engine_postscale",
                 "engine_prescale", "postscale", "prescale", "wire")

    def fix_ups(self):
        """Whether anything is done here after the reduction."""
        return self.postscale is not None or self.divide_by is not None


def _refuse(message):
    raise _ops.invalid(message)


def reduction(dtype, op, prescale=1.0, postscale=1.0, set_size=None, what="allreduce"):
    """The Rule for reducing a tensor of element type ``dtype`` (a name)
    with ``op``; raises InvalidArgumentError for what cannot be reduced.
    ``set_size()`` gives the process set's size; it is called only for an
    integer Average."""
    rule = Rule()
    rule.engine_op, rule.complex_parts = op, False
    rule.engine_prescale, rule.engine_postscale = float(prescale), float(postscale)
    rule.prescale = rule.postscale = rule.divide_by = None
    if dtype in NATIVE:
        rule.wire = dtype
    elif dtype in WIDENED:
        rule.wire = WIDENED[dtype]
    elif dtype in COMPLEX_PARTS:
        if op not in (_ops.Sum, _ops.Average):
            _refuse("%s: %s of complex numbers has no meaning; only Sum and Average reduce %s"
                    % (what, _ops.OP_NAMES[op], dtype))
        rule.wire, rule.complex_parts = COMPLEX_PARTS[dtype], True
    else:
        _refuse("%s: tensors of type %s cannot be reduced; supported: %s"
                % (what, dtype, REDUCIBLE))
    rule.engine_dtype = NATIVE[rule.wire]
    if op == _ops.Adasum and (rule.wire not in FLOATS or rule.complex_parts):
        _refuse("%s: Adasum combines floating-point tensors only, got %s; use float16, "
                "bfloat16, float32 or float64" % (what, dtype))
    if rule.wire == "bool":
        if op == _ops.Average:
            _refuse("%s: Average of a bool tensor has no meaning; use Sum (or) or Min (and)"
                    % what)
        if rule.engine_prescale != 1.0 or rule.engine_postscale != 1.0:
            _refuse("%s: prescale_factor/postscale_factor on a bool tensor have no meaning; "
                    "convert it to a number type first" % what)
    elif rule.wire not in FLOATS:
        _integer_scaling(rule, op, set_size)
    return rule


def _integer_scaling(rule, op, set_size):
    """The engine scales floating types only: an integer reduction runs as
    Sum (for Average) without factors, which are applied here."""
    pre, post = rule.engine_prescale, rule.engine_postscale
    rule.engine_prescale = rule.engine_postscale = 1.0
    rule.prescale = pre if pre != 1.0 else None
    if op == _ops.Average:
        rule.engine_op = _ops.Sum
        if post == 1.0:
            rule.divide_by = int(set_size())
        else:
            rule.postscale = post / set_size()
    elif post != 1.0:
        rule.postscale = post


def engine_dtype(dtype):
    """The engine's dtype for a type it handles natively, else None."""
    return NATIVE.get(dtype)


def byte_form(dtype, shape, itemsize):
    """(engine dtype, engine shape) of a tensor for the collectives that move
    bytes (broadcast, allgather, alltoall): its own type when the engine has
    it, else uint8 with one trailing dimension of the element size added.
    The engine then checks shapes in bytes, which agree exactly when the
    element shapes agree, and the first dimension keeps its length."""
    native = NATIVE.get(dtype)
    if native is not None:
        return native, list(shape)
    return _dtypes.UINT8, list(shape) + [int(itemsize)]


def from_byte_shape(dtype, shape):
    """The element shape of an engine output described by :func:`byte_form`."""
    return tuple(shape) if dtype in NATIVE else tuple(shape)[:-1]
