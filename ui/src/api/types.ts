/**
 * The API types the UI uses. Today they come from `provisional.ts`; when the
 * generated bindings in `../bindings/` cover a type, re-export it from there
 * instead, so every view keeps importing from this one module.
 */
export * from "./provisional";
