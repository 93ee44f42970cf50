"""Values of tandem_dtype_t and tandem_op_t (include/tandem/tandem.h).

These enums are part of the stable ABI (the header says to keep values
stable). ctypes cannot read an enum, so the values are written here once;
:func:`verify` checks them against the loaded library's ``tandem_dtype_size``
so a library with a different numbering is refused rather than misread.
"""

from tandem import _library

UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, BOOL = range(9)
SIZES = {UINT8: 1, INT8: 1, INT32: 4, INT64: 8, FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4,
         FLOAT64: 8, BOOL: 1}
NAMES = {UINT8: "uint8", INT8: "int8", INT32: "int32", INT64: "int64", FLOAT16: "float16",
         BFLOAT16: "bfloat16", FLOAT32: "float32", FLOAT64: "float64", BOOL: "bool"}

SUM, AVERAGE, MIN, MAX, PRODUCT, ADASUM = range(6)

_verified = False


def verify():
    global _verified
    if _verified:
        return
    lib = _library.library()
    for value, size in SIZES.items():
        reported = lib.tandem_dtype_size(value)
        if reported != size:
            raise _library.LibraryNotFound(
                "libtandem (%s) says dtype %d (%s) is %d bytes, this package expects %d: "
                "the library and the python package come from different builds"
                % (lib.origin, value, NAMES[value], reported, size))
    _verified = True
