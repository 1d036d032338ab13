// The whole graph in a corner: every visible node as a small box in its kind's colour, and
// the part the canvas shows as a frame; a click or a drag on it moves the canvas there. Drawn
// on its own small canvas from node positions, so it costs nothing like a second Cytoscape.

import type { Core } from "cytoscape";

import { h } from "./dom";

const WIDTH = 200;
const HEIGHT = 130;
const MARGIN = 6;

const FILL: Record<string, string> = {
  dataset: "#93c5fd",
  job: "#fbbf24",
  workflow: "#a78bfa",
};

/** Graph point (x0, y0) is drawn at map pixel (left, top); k map pixels per graph unit. */
interface Scale {
  x0: number;
  y0: number;
  left: number;
  top: number;
  k: number;
}

export class Minimap {
  readonly element: HTMLCanvasElement;
  private scale: Scale = { x0: 0, y0: 0, left: MARGIN, top: MARGIN, k: 1 };
  private pending = false;

  constructor(private readonly cy: Core) {
    this.element = h("canvas", {
      class: "minimap",
      id: "graph-minimap",
      width: WIDTH * devicePixelRatio,
      height: HEIGHT * devicePixelRatio,
      title: "The whole graph: click or drag to move there",
      "aria-label": "Minimap of the whole graph",
    });
    cy.on("viewport resize add remove", () => this.redraw());
    cy.on("class", "node", () => this.redraw());
    const moveTo = (event: PointerEvent) => {
      const box = this.element.getBoundingClientRect();
      const { x0, y0, left, top, k } = this.scale;
      this.centreOn(x0 + (event.clientX - box.left - left) / k, y0 + (event.clientY - box.top - top) / k);
    };
    this.element.addEventListener("pointerdown", (event) => {
      this.element.setPointerCapture(event.pointerId);
      moveTo(event);
    });
    this.element.addEventListener("pointermove", (event) => {
      if (this.element.hasPointerCapture(event.pointerId)) moveTo(event);
    });
    this.redraw();
  }

  /** Put the graph point (x, y) in the middle of the canvas. */
  centreOn(x: number, y: number): void {
    const zoom = this.cy.zoom();
    this.cy.pan({ x: this.cy.width() / 2 - zoom * x, y: this.cy.height() / 2 - zoom * y });
  }

  /** Draw on the next frame (many viewport events arrive per frame). */
  redraw(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.paint();
    });
  }

  private paint(): void {
    const nodes = this.cy.nodes("[kind != 'field']").filter((node) => node.visible());
    const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
    nodes.forEach((node) => {
      const { x, y } = node.position();
      const w = Number(node.data("width")) / 2;
      const ht = Number(node.data("height")) / 2;
      box.x1 = Math.min(box.x1, x - w);
      box.x2 = Math.max(box.x2, x + w);
      box.y1 = Math.min(box.y1, y - ht);
      box.y2 = Math.max(box.y2, y + ht);
    });
    const view = this.cy.extent();
    // Nothing to find when the canvas shows every node.
    const whole = !nodes.length || (view.x1 <= box.x1 && view.y1 <= box.y1 && view.x2 >= box.x2 && view.y2 >= box.y2);
    this.element.hidden = whole;
    if (whole) return;
    const k = Math.min((WIDTH - 2 * MARGIN) / (box.x2 - box.x1), (HEIGHT - 2 * MARGIN) / (box.y2 - box.y1));
    // The graph is centred on the map, so a wide one sits in the middle rather than at the top.
    const left = (WIDTH - (box.x2 - box.x1) * k) / 2;
    const top = (HEIGHT - (box.y2 - box.y1) * k) / 2;
    this.scale = { x0: box.x1, y0: box.y1, left, top, k };
    const context = this.element.getContext("2d");
    if (!context) return;
    context.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
    context.clearRect(0, 0, WIDTH, HEIGHT);
    const at = (x: number, y: number) => [left + (x - box.x1) * k, top + (y - box.y1) * k];
    nodes.forEach((node) => {
      const { x, y } = node.position();
      const [px, py] = at(x - Number(node.data("width")) / 2, y - Number(node.data("height")) / 2);
      const centre = node.data("centre") === true;
      context.fillStyle = centre ? "#0f766e" : (FILL[String(node.data("kind"))] ?? FILL.job);
      const size = centre ? 4 : 1.5;
      context.fillRect(px, py, Math.max(size, Number(node.data("width")) * k), Math.max(size, Number(node.data("height")) * k));
    });
    const [vx, vy] = at(view.x1, view.y1);
    context.strokeStyle = "#0f766e";
    context.lineWidth = 1.5;
    context.strokeRect(vx, vy, (view.x2 - view.x1) * k, (view.y2 - view.y1) * k);
  }
}
