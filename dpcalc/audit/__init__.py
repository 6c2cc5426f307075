"""Empirical privacy audits of DP-SGD runs: what an actual attack achieves on an actual run,
as an ε lower bound with a stated confidence, to set beside the certified interval.

    settings = AuditSettings(mode="one-run", canary="gradient", canaries=1000, delta=1e-5)
    canaries = one_run_canaries(settings, config, train)        # before training
    history = train_dp_sgd(config, train, test, canaries=canaries)
    result = finish_one_run(settings, canaries, history)        # result.epsilon_lower
    result = monte_carlo_audit(replace(settings, mode="monte-carlo", runs=1000), config, N)

Statistics in bounds.py (no training), canaries in canaries.py, the one-run audit in
experiment.py, the many-run audit in monte_carlo.py. No printing, no typer or rich.
"""
from dpcalc.audit.bounds import (clopper_pearson_upper, epsilon_from_error_rates, monte_carlo_bound,
                                 one_run_bound, one_run_epsilon_lower, one_run_p_value)
from dpcalc.audit.experiment import (AUDIT_MODES, AuditResult, AuditSettings, Verdict,
                                     check_auditable, finish_one_run, one_run_canaries, verdict)
from dpcalc.audit.monte_carlo import monte_carlo_audit

__all__ = ["AUDIT_MODES", "AuditResult", "AuditSettings", "Verdict", "check_auditable",
           "clopper_pearson_upper", "epsilon_from_error_rates", "finish_one_run",
           "monte_carlo_audit", "monte_carlo_bound", "one_run_bound", "one_run_canaries",
           "one_run_epsilon_lower", "one_run_p_value", "verdict"]
