"""``instruments.bench_layouts`` on the CPU: each candidate gets the same values in the layout
its name says, and the table puts each row beside the contiguous one of its setting."""
import pytest

torch = pytest.importorskip("torch")

from instruments import bench_layouts as bl


def test_same_values_in_each_layout():
    q, k, v = (torch.randn(2, 3, 40, 64) for _ in range(3))
    for layout in bl.ATTENTION_LAYOUTS:
        qs, ks, vs, o = bl.attention_inputs(q, k, v, layout)
        for x, x0 in zip((qs, ks, vs), (q, k, v)):
            assert torch.equal(x, x0)
        assert o.shape == q.shape
        if layout == "contiguous":
            assert qs.is_contiguous() and o.is_contiguous()
        else:  # FA3's (batch, seq, heads, d) memory order: heads inside seq
            assert not qs.is_contiguous() and qs.stride(1) < qs.stride(2)
            assert o.transpose(1, 2).is_contiguous()
    qp, kp, _, _ = bl.attention_inputs(q, k, v, "packed_qkv")
    assert kp.data_ptr() - qp.data_ptr() == 3 * 64 * qp.element_size()  # one projection: H·d apart


def test_table_ratio_to_the_contiguous_row(capsys):
    base = {"workload": "attention", "B": 1, "H": 2, "S": 1024, "d": 128, "causal": False,
            "ok": True, "rel_err": 1e-3, "tflops_min": 0, "tflops_max": 0}
    rows = [dict(base, variant="fa3 contiguous", tflops=400.0),
            dict(base, variant="fa3 bshd", tflops=396.0),
            dict(base, variant="sdpa_cudnn", tflops=420.0)]
    bl.print_table(rows)
    out = capsys.readouterr().out
    assert "1.000x" in out and "0.990x" in out
    assert out.count("x  (rel_err") == 2  # cuDNN's row has no layout ratio
