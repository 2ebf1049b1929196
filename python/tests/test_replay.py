"""Strategies replayed on recorded spaces, from data/spaces and from a store."""
import hetune


def test_replay_a_recorded_file(source_dir):
    with hetune.Recorded.load(source_dir / "data/spaces/gemm_c.csv") as rec:
        stats = rec.stats
        assert len(rec) == stats["n"] > 100 and stats["f_opt"] > 0
        r = rec.replay("random", budget=15, seed=3)
        assert len(r.steps) == 15
        best = [s["best"] for s in r.steps]
        assert best == sorted(best, reverse=True) and r.best_time_s == best[-1] >= stats["f_opt"]
        assert set(r.best) == set(rec.replay("bayes", budget=5).best)
        # a seed replays the same configs; without the strategy's own time, at the same times
        same = [rec.replay("random", budget=15, seed=3, charge_strategy_time=False) for _ in range(2)]
        assert same[0].steps == same[1].steps and [s["value"] for s in same[0].steps] == [s["value"] for s in r.steps]
        assert list(r.to_dataframe().columns) == ["t", "value", "best"]


def test_replay_a_store(vadd, store):
    vadd.add_constraint("NTHREADS == 1 && CHUNK == 0")  # 4 configs (UNROLL), valid on any machine
    tuned = vadd.tune(store, strategy="brute_force", budget="all", sizes={"N": 30000})
    with hetune.Recorded.from_store(store, vadd, tuned.device) as rec:
        assert len(rec) == 4
        r = rec.replay("brute_force")
        assert len(r.steps) == 4 and r.best_time_s == tuned.best.time_s and r.best == tuned.best.config


def test_a_bad_recording_is_an_error(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("not,a,recording\n1,2\n")
    try:
        hetune.Recorded.load(f)
    except hetune.Error as e:
        assert "r.csv" in str(e)
    else:
        raise AssertionError("a bad recording loaded")
