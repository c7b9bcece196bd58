import fc from "fast-check";

/**
 * One seed for every property of a mutation run (`MUTATION_SEED`, default below), so that a run
 * with fewer cases (`PROPERTY_RUNS_FACTOR`) tries the same cases on every mutant and a score is
 * reproducible. `npm test` keeps fast-check's random seeds.
 */
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: Number(process.env.MUTATION_SEED ?? "20261201") });
