#!/usr/bin/env python3
"""latency_target.py's parts that decide its verdicts, on hand-written
runs: the config rewrite, "meets the target" (p99 and failed requests), the
fixed-rate table's best static config and ratio, and the step/ramp
verdict."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency_target as lt  # noqa: E402

SOURCE = """name: "m"
max_batch_size: 8
dynamic_batching {
  # a comment with a { brace
  max_queue_delay_microseconds: 0
}
instance_group [ { count: 1 } ]
"""


def run(model, throughput, p99, failed=0.0, arrival="poisson", rate=100.0):
    return dict(model=model, throughput=throughput, p50=1.0, p99=p99, failed=failed,
                batch=2.0, arrival=arrival, rate=rate)


def main() -> int:
    text = lt.config_text("m_d5", SOURCE, "max_queue_delay_microseconds: 5", "parameters { }\n")
    assert 'name: "m_d5"' in text and "instance_group [ { count: 1 } ]" in text, text
    assert text.count("dynamic_batching") == 1 and "max_queue_delay_microseconds: 0" not in text, text
    assert text.endswith("dynamic_batching { max_queue_delay_microseconds: 5 }\nparameters { }\n"), text

    assert lt.meets(run("m_target", 100, 20.0), 20)
    assert not lt.meets(run("m_target", 100, 20.1), 20)
    assert lt.meets(run("m_target", 100, 5.0, failed=0.01), 20)
    assert not lt.meets(run("m_target", 100, 5.0, failed=0.011), 20)  # shed requests count

    runs = [run("m_target", 95, 10.0), run("m_d0", 100, 15.0), run("m_d1000", 120, 25.0),
            run("m_d500", 90, 5.0)]
    table = lt.fixed_table(runs, 20, "m")
    # d1000 misses 20 ms: the best static that meets it is d0 at 100/s.
    assert table[2] == "| poisson | 100 | 95, 10.0, 0.0% | 2 of 3 | d0, 100 | 0.95 |", table

    shape = [run("m_target", 100, 10.0, arrival="step"), run("m_d0", 100, 30.0, arrival="step"),
             run("m_d5", 94, 12.0, arrival="step")]
    verdict = lt.shape_table(shape, 20, "m")[-1]
    assert "no static config does so at 0.95x its throughput" in verdict, verdict
    shape.append(run("m_d9", 96, 19.0, arrival="step"))
    verdict = lt.shape_table(shape, 20, "m")[-1]
    assert verdict.endswith("static configs that match it: d9."), verdict
    print("latency_target_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
