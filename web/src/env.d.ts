declare module "*.css";
/** The AudioWorklet bundle's path under /assets/ (build.mjs defines it). */
declare const FORGE_WORKLET_URL: string;
