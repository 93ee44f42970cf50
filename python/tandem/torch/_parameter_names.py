"""The names the distributed optimizers give their parameters (both the
averaging one, optimizer.py, and Adasum's, adasum_optimizer.py): the engine
pairs each parameter's collective across ranks by that name."""


def named_in_order(param_groups, named_parameters):
    """(name, parameter) pairs sorted by name, after Horovod's checks of
    ``named_parameters``; without it the names are the parameters' positions
    in the optimizer's groups, the same on every rank."""
    if named_parameters is not None:
        named_parameters = list(named_parameters)
    else:
        named_parameters = [("allreduce.noname.%d.%d" % (i, j), p)
                            for i, group in enumerate(param_groups)
                            for j, p in enumerate(group["params"])]
    if any(not isinstance(item, tuple) or len(item) != 2 for item in named_parameters):
        raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                         "usually produced by model.named_parameters()")
    names = [name for name, _ in named_parameters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError("Parameter names in named_parameters must be unique. Found "
                         "duplicates: %s" % ", ".join(duplicates))
    named_ids = {id(p) for _, p in named_parameters}
    unnamed = [p for group in param_groups for p in group["params"] if id(p) not in named_ids]
    if unnamed:
        raise ValueError("named_parameters was specified, but %d of the optimizer's "
                         "parameters were not named: pass model.named_parameters() of the "
                         "model whose parameters the optimizer holds" % len(unnamed))
    return sorted(named_parameters, key=lambda item: item[0])
