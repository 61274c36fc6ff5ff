/**
 * The one casing of every command's --json: snake_case keys (as Slurm's and
 * Prometheus' JSON, and most of the outputs already were). The internal model
 * may stay camelCase (the store's JSON columns and the AdminComment summary
 * are stored data, read as written); it is converted once, at the output
 * boundary, with these: the key rename typed, so the output's type says its
 * keys.
 */

/** A camelCase name in snake_case: gpuHours -> gpu_hours, energyJ -> energy_j, fp64Active -> fp64_active. */
export type Snake<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Uppercase<H> ? (H extends Lowercase<H> ? H : `_${Lowercase<H>}`) : H}${Snake<T>}`
  : S;

/** An object's keys in snake_case, its values as they are (a map inside keeps its keys: they are data). */
export type SnakeKeys<T> = { [K in keyof T as K extends string ? Snake<K> : K]: T[K] };

/** A key in snake_case, as Snake types it. */
export function snake<S extends string>(s: S): Snake<S> {
  return s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) as Snake<S>;
}

/** An object's own keys in snake_case (shallow: values, and the maps among them, are kept as they are). */
export function snakeKeys<T extends object>(o: T): SnakeKeys<T> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [snake(k), v])) as SnakeKeys<T>;
}
