"""The CUDA branch of tandem.torch at the ctypes boundary, on a machine
without CUDA.

A "CUDA tensor" here is workers.fake_cuda.fake_cuda(): host memory whose
device says cuda:N. The library object behind tandem._collectives is
replaced by workers.fake_cuda.Recorder, which records what crosses into C
(tandem_set_device_stream, every field of each tandem_tensor_t, the result
copies) and answers as a world of one. What these tests prove: the device
index, the data pointers and the current stream of the tensor's device reach
the engine, on the enqueuing thread, right before each enqueue; results of
allgather/alltoall/reducescatter are allocated on the tensor's device and
filled by tandem_handle_copy_output, with the streams ordered around that
copy; CPU tensors still take the host path. What they cannot prove: anything
that needs a GPU (tests/python/test_torch_gpu.py runs that where one exists).
"""

import threading

import pytest
import torch

import horovod.torch as hvd
from tandem import _basics, _collectives, _dtypes, errors
from tandem.torch import _cuda
from workers.fake_cuda import Recorder, fake_cuda, fake_streams, stream_handle

ALLREDUCE = "tandem_enqueue_allreduce"


@pytest.fixture
def engine(monkeypatch, build_dir):
    """The Recorder in place of libtandem's runtime calls, torch.cuda's
    stream calls faked, result tensors on the fake device; a world of one."""
    recorder = Recorder(_collectives._lib(), _dtypes.SIZES)
    monkeypatch.setattr(_collectives, "_lib", lambda: recorder)
    monkeypatch.setattr(_collectives, "process_set_rank", lambda ident: 0)
    monkeypatch.setattr(_collectives, "process_set_size", lambda ident: 1)
    monkeypatch.setattr(_basics, "size", lambda: 1)
    monkeypatch.setattr(_basics, "rank", lambda: 0)
    fake_streams(monkeypatch, recorder.log)
    recorder.allocations = []

    def empty(shape, dtype, device):
        recorder.allocations.append((tuple(shape), dtype, torch.device(device)))
        return fake_cuda(torch.empty(shape, dtype=dtype), torch.device(device).index)
    monkeypatch.setattr(_cuda, "empty", empty)
    return recorder


def enqueues(engine, fn=None):
    return [e for e in engine.events("enqueue") if fn is None or e[1] == fn]


def assert_stream_set_before_each_enqueue(engine, device):
    """Every enqueue of a CUDA tensor is preceded, on the same thread and with
    no other call in between, by tandem_set_device_stream(current stream)."""
    log = [e for e in engine.log if e[0] in ("stream", "enqueue")]
    seen = 0
    for i, event in enumerate(log):
        if event[0] != "enqueue" or event[3][0].device < 0:
            continue
        assert i > 0 and log[i - 1][0] == "stream", log
        assert log[i - 1][1] == event[2], "stream set on another thread than the enqueue"
        assert log[i - 1][2] == stream_handle(device)
        seen += 1
    assert seen, "no CUDA enqueue was recorded"


def test_allreduce_passes_device_index_pointers_and_stream(engine):
    t = fake_cuda(torch.arange(6, dtype=torch.float32).reshape(2, 3), 1)
    out = hvd.allreduce(t, op=hvd.Sum, name="x")
    (_, fn, _, (rec,), extra), = enqueues(engine)
    assert fn == ALLREDUCE and rec.name == "allreduce.x"  # Horovod's engine name
    assert rec.device == 1 and rec.dtype == _dtypes.FLOAT32 and rec.shape == (2, 3)
    assert rec.input == t.data_ptr() and rec.output == out.data_ptr() != t.data_ptr()
    assert out.device == torch.device("cuda", 1)
    assert extra["op"] == _dtypes.SUM
    assert_stream_set_before_each_enqueue(engine, 1)
    assert torch.equal(out, torch.arange(6, dtype=torch.float32).reshape(2, 3))


def test_in_place_allreduce_hands_one_pointer(engine):
    t = fake_cuda(torch.ones(5, dtype=torch.float64), 0)
    hvd.allreduce_(t, op=hvd.Average, prescale_factor=2.0)
    (_, _, _, (rec,), extra), = enqueues(engine)
    assert rec.input == rec.output == t.data_ptr() and rec.device == 0
    assert extra["prescale"] == 2.0
    assert_stream_set_before_each_enqueue(engine, 0)


def test_cpu_tensors_keep_the_host_path(engine):
    t = torch.ones(4)
    hvd.allreduce_(t, op=hvd.Sum)
    hvd.allgather(torch.ones(2, 2))
    assert not engine.events("stream"), "a CPU tensor set a device stream"
    assert all(e[3][0].device == _collectives.DEVICE_CPU for e in enqueues(engine))
    assert not engine.allocations  # host results: plain torch.empty
    assert not engine.events("wait_stream")


def test_grouped_allreduce_one_stream_one_enqueue(engine):
    ts = [fake_cuda(torch.full((i + 1,), float(i)), 2) for i in range(3)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum, name="g")
    (_, fn, _, recs, _), = enqueues(engine)
    assert fn == "tandem_enqueue_grouped_allreduce"
    assert [r.device for r in recs] == [2, 2, 2]
    assert [r.input for r in recs] == [t.data_ptr() for t in ts]
    assert [r.output for r in recs] == [o.data_ptr() for o in outs]
    assert len(engine.events("stream")) == 1
    assert_stream_set_before_each_enqueue(engine, 2)


def test_noncontiguous_and_int16_go_through_device_copies(engine):
    base = fake_cuda(torch.arange(12, dtype=torch.int16).reshape(3, 4), 0)
    view = base.t()
    hvd.allreduce_(view, op=hvd.Sum)
    (_, _, _, (rec,), _), = enqueues(engine)
    # widened to int32 in a contiguous copy on the same (fake) device
    assert rec.device == 0 and rec.dtype == _dtypes.INT32 and rec.input != base.data_ptr()
    assert torch.equal(base, torch.arange(12, dtype=torch.int16).reshape(3, 4))


def test_broadcast_in_place_and_out_of_place(engine):
    t = fake_cuda(torch.arange(4, dtype=torch.float16), 3)
    hvd.broadcast_(t, root_rank=0, name="b")
    out = hvd.broadcast(t, root_rank=0, name="b2")
    (_, _, _, (a,), ea), (_, _, _, (b,), _) = enqueues(engine, "tandem_enqueue_broadcast")
    assert a.device == b.device == 3 and ea["root"] == 0
    assert a.input == a.output == t.data_ptr()
    assert b.input == t.data_ptr() and b.output == out.data_ptr()
    assert_stream_set_before_each_enqueue(engine, 3)


def _ordered_copy(engine, device):
    """Default stream waits for the current one, then the copy, then the
    current stream waits for the default one."""
    kinds = [(e[0], e[1:3]) if e[0] == "wait_stream" else (e[0],) for e in engine.log
             if e[0] in ("wait_stream", "copy_output")]
    current = stream_handle(device)
    assert kinds[0] == ("wait_stream", (0, current)), kinds
    assert ("copy_output",) in kinds
    assert kinds[-1] == ("wait_stream", (current, 0)), kinds
    last_copy = max(i for i, k in enumerate(kinds) if k == ("copy_output",))
    assert kinds.index(("wait_stream", (current, 0))) > last_copy


def test_allgather_result_is_allocated_on_the_device_and_copied_by_the_engine(engine):
    t = fake_cuda(torch.arange(6, dtype=torch.float32).reshape(3, 2), 1)
    out = hvd.allgather(t, name="ag")
    (_, _, _, (rec,), _), = enqueues(engine, "tandem_enqueue_allgather")
    assert rec.device == 1 and rec.input == t.data_ptr() and rec.output == 0
    assert engine.allocations == [((3, 2), torch.float32, torch.device("cuda", 1))]
    (_, _, _, index, dst, nbytes), = engine.events("copy_output")
    assert index == 0 and dst == out.data_ptr() and nbytes == 24
    assert out.device == torch.device("cuda", 1)
    assert torch.equal(out, torch.arange(6, dtype=torch.float32).reshape(3, 2))
    _ordered_copy(engine, 1)
    assert_stream_set_before_each_enqueue(engine, 1)


def test_allgather_of_a_type_the_engine_lacks_travels_as_bytes(engine):
    t = fake_cuda(torch.arange(4, dtype=torch.int16).reshape(2, 2), 0)
    out = hvd.allgather(t)
    (_, _, _, (rec,), _), = enqueues(engine)
    # Bytes with a trailing dimension of the element size.
    assert rec.dtype == _dtypes.UINT8 and rec.shape == (2, 2, 2) and rec.device == 0
    assert engine.allocations == [((2, 2), torch.int16, torch.device("cuda", 0))]
    assert torch.equal(out, torch.arange(4, dtype=torch.int16).reshape(2, 2))


def test_alltoall_and_reducescatter_results_on_the_device(engine):
    t = fake_cuda(torch.arange(4, dtype=torch.float32), 2)
    out, received = hvd.alltoall(t, splits=[4], name="a2a")
    assert torch.equal(out, torch.arange(4, dtype=torch.float32))
    assert received.tolist() == [4] and received.device.type == "cpu"
    rs = hvd.reducescatter(fake_cuda(torch.arange(6, dtype=torch.float64).reshape(3, 2), 2),
                           op=hvd.Sum, name="rs")
    assert rs.device == torch.device("cuda", 2)
    assert torch.equal(rs, torch.arange(6, dtype=torch.float64).reshape(3, 2))
    recs = [e[3][0] for e in enqueues(engine)]
    assert [r.device for r in recs] == [2, 2]
    assert [a[2] for a in engine.allocations] == [torch.device("cuda", 2)] * 2
    assert len(engine.events("copy_output")) == 2
    assert_stream_set_before_each_enqueue(engine, 2)


def test_no_stream_ordering_when_the_current_stream_is_the_default(engine, monkeypatch):
    fake_streams(monkeypatch, engine.log, current_is_default=True)
    hvd.allgather(fake_cuda(torch.ones(2), 0))
    assert engine.events("stream")[0][2] == 0  # the legacy default stream: NULL
    assert not engine.events("wait_stream")


def test_stream_is_set_on_the_enqueuing_thread(engine):
    errors_seen = []

    def work():
        try:
            hvd.allreduce(fake_cuda(torch.ones(3), 1), name="from-thread")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors_seen.append(exc)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors_seen, errors_seen
    (_, thread_id, _), = engine.events("stream")
    assert thread_id == engine.events("enqueue")[0][2] != threading.get_ident()


def test_distributed_optimizer_reduces_cuda_gradients_in_place(engine, monkeypatch):
    # A world of one reduces nothing (as Horovod) unless HOROVOD_ELASTIC=1.
    monkeypatch.setenv("HOROVOD_ELASTIC", "1")
    w = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.zeros(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w, b], lr=0.5),
                                   named_parameters=[("w", w), ("b", b)])
    w.grad = fake_cuda(torch.full((3,), 2.0), 0)
    b.grad = fake_cuda(torch.full((2,), 4.0), 0)
    grads = {"allreduce.w": w.grad.data_ptr(), "allreduce.b": b.grad.data_ptr()}
    opt.step()
    recs = {e[3][0].name: e[3][0] for e in enqueues(engine, ALLREDUCE)}
    assert set(recs) == set(grads)
    for name, rec in recs.items():
        assert rec.device == 0 and rec.input == rec.output == grads[name]
    assert_stream_set_before_each_enqueue(engine, 0)
    assert torch.equal(w.detach(), torch.zeros(3)) and torch.equal(b.detach(),
                                                                   torch.full((2,), -2.0))


def test_broadcast_parameters_sends_each_cuda_tensor_from_its_device(engine):
    state = {"a": fake_cuda(torch.ones(2), 1), "b": torch.zeros(3)}
    hvd.broadcast_parameters(state, root_rank=0)
    recs = {e[3][0].name: e[3][0] for e in enqueues(engine, "tandem_enqueue_broadcast")}
    assert recs["broadcast.a"].device == 1
    assert recs["broadcast.a"].input == state["a"].data_ptr()
    assert recs["broadcast.b"].device == _collectives.DEVICE_CPU
    assert len(engine.events("stream")) == 1


def test_other_devices_are_refused_before_the_engine(engine):
    with pytest.raises(errors.TandemError) as info:
        hvd.allreduce(torch.empty(3, device="meta"))
    assert isinstance(info.value, errors.make("TANDEM_ERR_UNSUPPORTED", "").__class__)
    assert "meta" in str(info.value) and "CPU and CUDA" in str(info.value)
    assert not enqueues(engine)
