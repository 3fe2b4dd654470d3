/** Stylesheets imported for their effect: esbuild gathers them into the console's one CSS file. */
declare module '*.css';
