/* A minimal SVG line plot with shaded bands: enough for score curves, no plotting dependency. */
#include <math.h>
#include <stdio.h>

#include "cli/cli.h"

enum { W = 760, H = 440, L = 60, R = 170, T = 36, B = 48 };

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

static double px(double x, double x0, double x1) { return L + (x - x0) / (x1 - x0) * (W - L - R); }
static double py(double y, double y0, double y1) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); }

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else fputc(*s, f);
  }
}

static void axes(FILE *f, const plot_spec *p, double y0, double y1) {
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", L, T, W - L - R, H - T - B);
  for (int i = 0; i <= p->y_ticks; i++) {
    double y = y0 + i * (y1 - y0) / p->y_ticks;
    fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>\n", L, W - R, py(y, y0, y1), py(y, y0, y1));
    fprintf(f, "<text x='%d' y='%.1f' font-size='11' text-anchor='end'>%.3g</text>\n", L - 4, py(y, y0, y1) + 4, y);
  }
  for (int i = 0; i <= 4; i++) {
    double x = p->x0 + i * (p->x1 - p->x0) / 4;
    fprintf(f, "<text x='%.1f' y='%d' font-size='11' text-anchor='middle'>%.3g</text>\n", px(x, p->x0, p->x1),
            H - B + 16, x);
  }
  if (y0 < 0 && y1 > 0)
    fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#888' stroke-dasharray='4'/>\n", L, W - R,
            py(0, y0, y1), py(0, y0, y1));
  fprintf(f, "<text x='%d' y='22' font-size='14'>", L);
  xml_text(f, p->title);
  fprintf(f, "</text>\n<text x='%d' y='%d' font-size='12' text-anchor='middle'>", (L + W - R) / 2, H - 10);
  xml_text(f, p->xlabel);
  fprintf(f, "</text>\n<text x='14' y='%d' font-size='12' transform='rotate(-90 14 %d)' text-anchor='middle'>",
          (T + H - B) / 2, (T + H - B) / 2);
  xml_text(f, p->ylabel);
  fputs("</text>\n", f);
}

static void series(FILE *f, const plot_spec *p, int s, double y0, double y1) {
  const char *color = palette[s % 10];
  double clip_lo = y0, clip_hi = y1;
  if (p->band) { /* band: y +- band, as a closed polygon */
    fprintf(f, "<polygon fill='%s' fill-opacity='0.12' stroke='none' points='", color);
    for (int i = 0; i < p->n; i++) {
      double v = fmin(clip_hi, fmax(clip_lo, p->y[s][i] + p->band[s][i]));
      fprintf(f, "%.1f,%.1f ", px(p->x[i], p->x0, p->x1), py(v, y0, y1));
    }
    for (int i = p->n - 1; i >= 0; i--) {
      double v = fmin(clip_hi, fmax(clip_lo, p->y[s][i] - p->band[s][i]));
      fprintf(f, "%.1f,%.1f ", px(p->x[i], p->x0, p->x1), py(v, y0, y1));
    }
    fputs("'/>\n", f);
  }
  fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.8' points='", color);
  for (int i = 0; i < p->n; i++)
    fprintf(f, "%.1f,%.1f ", px(p->x[i], p->x0, p->x1), py(fmin(clip_hi, fmax(clip_lo, p->y[s][i])), y0, y1));
  fputs("'/>\n", f);
  fprintf(f, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='3'/>", W - R + 10, W - R + 30,
          T + 10 + 18 * s, T + 10 + 18 * s, color);
  fprintf(f, "<text x='%d' y='%d' font-size='12'>", W - R + 36, T + 14 + 18 * s);
  xml_text(f, p->names[s]);
  fputs("</text>\n", f);
}

int plot_svg(const char *path, const plot_spec *p) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n"
             "<rect width='100%%' height='100%%' fill='white'/>\n", W, H);
  axes(f, p, p->y0, p->y1);
  for (int s = 0; s < p->n_series; s++) series(f, p, s, p->y0, p->y1);
  fputs("</svg>\n", f);
  return fclose(f) == 0 ? 0 : -1;
}
