#!/usr/bin/env python3
"""Writes examples/onnx/: model.onnx, input_0.pb and output_0.pb (the layout of ONNX's test data).

The model is a tiny image classifier, small enough to read in a hex dump and big enough for the
README's commands (C and OpenCL backends, texture activations between its convolutions):

    x [1, 4, 16, 16] -> Conv 3x3 (8, pads 1) -> Relu -> Conv 3x3 (8, stride 2, pads 1) -> Relu
      -> GlobalAveragePool -> Flatten -> Gemm (4) -> Softmax -> probs [1, 4]

Weights and the input come from a fixed seed; output_0.pb is what numpy computes from them (an
independent reference: `tether run examples/onnx/model.onnx --in examples/onnx/input_0.pb`
matches it to float32 rounding).

Needs numpy only: the ONNX protobuf messages are encoded by hand below (field numbers from
onnx.proto). Not run by the tests or the build; the files it writes are committed. What must
stay true: running it again writes the same bytes.
"""
import os
import struct
import sys

import numpy as np

FLOAT = 1  # TensorProto.DataType.FLOAT
ATTR_INT, ATTR_INTS = 2, 7  # AttributeProto.AttributeType


# ---- protobuf wire format (varint, length-delimited) ----


def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


def f_packed_ints(field, vs):
    return f_bytes(field, b"".join(varint(v) for v in vs))


# ---- ONNX messages ----


def tensor(name, a):
    a = np.ascontiguousarray(a, dtype="<f4")
    return (f_packed_ints(1, a.shape) + f_int(2, FLOAT) + f_bytes(8, name) +
            f_bytes(9, a.tobytes()))


def value_info(name, shape):
    dims = b"".join(f_bytes(1, f_int(1, d)) for d in shape)  # Dimension.dim_value
    tensor_type = f_int(1, FLOAT) + f_bytes(2, dims)  # elem_type, shape
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))  # name, type.tensor_type


def attr_int(name, v):
    return f_bytes(1, name) + f_int(3, v) + f_int(20, ATTR_INT)


def attr_ints(name, vs):
    return f_bytes(1, name) + b"".join(f_int(8, v) for v in vs) + f_int(20, ATTR_INTS)


def node(op, name, inputs, outputs, attrs=()):
    return (b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs) +
            f_bytes(3, name) + f_bytes(4, op) + b"".join(f_bytes(5, a) for a in attrs))


# ---- the reference in numpy ----


def conv2d(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + b.reshape(1, o, 1, 1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rng = np.random.RandomState(20240611)
    x = rng.uniform(-1, 1, (1, 4, 16, 16)).astype(np.float32)
    w1 = (rng.standard_normal((8, 4, 3, 3)) * 0.25).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w3 = (rng.standard_normal((4, 8)) * 0.5).astype(np.float32)
    b3 = (rng.standard_normal(4) * 0.1).astype(np.float32)

    nodes = [
        node("Conv", "conv1", ["x", "conv1.weight", "conv1.bias"], ["c1"],
             [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1])]),
        node("Relu", "relu1", ["c1"], ["r1"]),
        node("Conv", "conv2", ["r1", "conv2.weight", "conv2.bias"], ["c2"],
             [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1]),
              attr_ints("strides", [2, 2])]),
        node("Relu", "relu2", ["c2"], ["r2"]),
        node("GlobalAveragePool", "pool", ["r2"], ["p"]),
        node("Flatten", "flatten", ["p"], ["f"], [attr_int("axis", 1)]),
        node("Gemm", "fc", ["f", "fc.weight", "fc.bias"], ["logits"], [attr_int("transB", 1)]),
        node("Softmax", "softmax", ["logits"], ["probs"], [attr_int("axis", -1)]),
    ]
    inits = [tensor("conv1.weight", w1), tensor("conv1.bias", b1), tensor("conv2.weight", w2),
             tensor("conv2.bias", b2), tensor("fc.weight", w3), tensor("fc.bias", b3)]
    graph = (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "tiny_cnn") +
             b"".join(f_bytes(5, t) for t in inits) + f_bytes(11, value_info("x", x.shape)) +
             f_bytes(12, value_info("probs", (1, 4))))
    opset = f_bytes(1, "") + f_int(2, 13)
    model = (f_int(1, 8) + f_bytes(2, "tether examples/onnx/make_model.py") + f_bytes(7, graph) +
             f_bytes(8, opset))

    r1 = np.maximum(conv2d(x.astype(np.float64), w1, b1, 1, 1), 0)
    r2 = np.maximum(conv2d(r1, w2, b2, 2, 1), 0)
    logits = r2.mean(axis=(2, 3)) @ w3.T.astype(np.float64) + b3
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)

    for name, data in (("model.onnx", model), ("input_0.pb", tensor("x", x)),
                       ("output_0.pb", tensor("probs", probs))):
        with open(os.path.join(here, name), "wb") as f:
            f.write(data)
    print("wrote %s: model.onnx (%d bytes), input_0.pb, output_0.pb; probs %s" %
          (here, len(model), np.array2string(probs[0], precision=6)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
