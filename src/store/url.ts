/** `PROVER_STORE_URL`, validated here only: unset or empty means SQLite in the data folder. */
import * as v from "valibot";

export const storeUrlSchema = v.pipe(v.string(), v.regex(/^(postgres(ql)?:\/\/.+)?$/, "must be a postgres:// URL"));
