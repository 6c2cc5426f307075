"""Empirical privacy audits of DP-SGD runs: what an actual attack achieves on an actual run,
as an ε lower bound with a stated confidence, to set beside the certified interval.

    settings = AuditSettings(mode="one-run", canary="gradient", canaries=1000, delta=1e-5)
    canaries = one_run_canaries(settings, config, train)        # before training
    history = train_dp_sgd(config, train, test, canaries=canaries)
    result = finish_one_run(settings, canaries, history)        # result.epsilon_lower
    result = monte_carlo_audit(replace(settings, mode="monte-carlo", runs=1000), config, N)

Statistics in bounds.py (no training), canaries in canaries.py (Monte Carlo) and dirac.py (the
one-run audit's Dirac canaries on extra input columns), the guess plan in guesses.py, the
one-run audit in experiment.py, the many-run audit in monte_carlo.py. No printing, no typer
or rich.
"""
from dpcalc.audit.bounds import (clopper_pearson_upper, epsilon_from_error_rates, monte_carlo_bound,
                                 monte_carlo_ceiling, one_run_bound, one_run_ceiling,
                                 one_run_epsilon_lower, one_run_p_value)
from dpcalc.audit.dirac import THREAT_MODELS
from dpcalc.audit.experiment import (AUDIT_MODES, DEFAULT_AUDIT_STEPS, MAX_AUDIT_STEPS, AuditResult, AuditSettings, Verdict,
                                     check_auditable, finish_one_run, one_run_canaries, verdict)
from dpcalc.audit.monte_carlo import check_monte_carlo_size, monte_carlo_audit

__all__ = ["AUDIT_MODES", "AuditResult", "AuditSettings", "DEFAULT_AUDIT_STEPS", "MAX_AUDIT_STEPS",
           "THREAT_MODELS", "Verdict", "check_auditable", "check_monte_carlo_size",
           "clopper_pearson_upper", "epsilon_from_error_rates", "finish_one_run",
           "monte_carlo_audit", "monte_carlo_bound", "monte_carlo_ceiling", "one_run_bound",
           "one_run_canaries", "one_run_ceiling", "one_run_epsilon_lower", "one_run_p_value",
           "verdict"]
