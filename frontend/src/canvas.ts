// A Cytoscape canvas as every graph of the UI opens it: zoomed by the wheel in steps a
// person notices, with a minimap of the whole graph in a corner and a note when the zoom is
// too small for labels. The canvas sits in a "stage" (its parent) that holds both.

import cytoscape from "cytoscape";
import type { Core, ElementDefinition } from "cytoscape";

import { labelsHidden } from "./graph-canvas";
import { STYLE } from "./graph-style";
import { h } from "./dom";
import { Minimap } from "./minimap";

/** Zoom factor of one wheel notch (Cytoscape's own is about 3 %, 25 notches from legible). */
export const WHEEL_STEP = 1.25;
/** Pixels of wheel travel Chromium and Firefox report for one notch. */
const NOTCH_PIXELS = 100;
/** Pixels per line and per page, for wheels that report in those units. */
const LINE_PIXELS = 33;
const PAGE_PIXELS = 400;
/** Above this many elements, drawing trades polish for speed while panning and zooming. */
const LARGE_GRAPH = 400;

/** `canvas` (inside its stage) as a Cytoscape graph of `elements`, laid out already. */
export function openCanvas(canvas: HTMLElement, elements: ElementDefinition[], minZoom = 0.05): Core {
  const large = elements.length > LARGE_GRAPH;
  const cy = cytoscape({
    container: canvas,
    elements,
    style: STYLE,
    minZoom,
    maxZoom: 3,
    autoungrabify: true,
    textureOnViewport: large,
    hideEdgesOnViewport: large,
    pixelRatio: large ? 1 : "auto",
    layout: { name: "preset" },
  });
  const stage = canvas.parentElement;
  if (stage) {
    zoomByNotches(cy, stage);
    const minimap = new Minimap(cy);
    const note = h("p", { class: "zoom-note", id: "zoom-note", hidden: true });
    stage.append(minimap.element, note);
    const update = () => {
      note.hidden = !labelsHidden(cy);
      note.textContent = `Labels are hidden at ${Math.round(cy.zoom() * 100)} %: scroll to zoom in, or pick a place on the map.`;
    };
    cy.on("viewport", update);
    cy.on("resize", update);
  }
  return cy;
}

/**
 * Wheel zoom in WHEEL_STEP steps per notch around the pointer (a touchpad's small deltas zoom
 * by the matching fraction of a step). The stage listens before Cytoscape's own handler and
 * keeps the event from it: Cytoscape's wheel sensitivity option warns on every graph.
 */
function zoomByNotches(cy: Core, stage: HTMLElement): void {
  stage.addEventListener(
    "wheel",
    (event) => {
      if (!(event.target instanceof Node) || !cy.container()?.contains(event.target)) return;
      event.preventDefault();
      event.stopPropagation();
      const unit = event.deltaMode === 1 ? LINE_PIXELS : event.deltaMode === 2 ? PAGE_PIXELS : 1;
      const notches = Math.max(-1, Math.min(1, (event.deltaY * unit) / NOTCH_PIXELS));
      const box = (cy.container() as HTMLElement).getBoundingClientRect();
      cy.zoom({
        level: cy.zoom() * WHEEL_STEP ** -notches,
        renderedPosition: { x: event.clientX - box.left, y: event.clientY - box.top },
      });
    },
    { capture: true, passive: false },
  );
}
