/**
 * The API types the UI uses: the declarations generated from
 * `crates/worldloom-api` (ts-rs, `../bindings/api.ts`, never edited by hand).
 * Every view imports from this one module.
 */
export * from "../bindings/api";
