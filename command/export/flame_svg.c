/* flame_svg.c — the flame graph as a self-contained SVG (differential: coloured by change). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_fmt.h"
#include "flame.h"

/* ---------------------------------------------------------------- SVG */

/* Text for XML: markup characters escaped, control characters dropped (XML 1.0 has no way to
 * write them), bytes that are not UTF-8 replaced by U+FFFD (one would make the SVG unreadable). */
static void xml_str(FILE *out, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t k = rd_utf8_seq(p);
    switch (*p) {
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '&': fputs("&amp;", out); break;
      case '"': fputs("&quot;", out); break;
      default:
        if (!k) fputs("\xef\xbf\xbd", out);
        else if (k > 1 || *p >= 0x20 || *p == '\t') fwrite(p, 1, k, out);
    }
    p += k ? k : 1;
  }
}

/* value with a unit, human readable (common/dlh_fmt.h) */
static void fmt_val(char *buf, size_t n, uint64_t v, int weight) {
  if (weight == RD_W_BYTES) dlh_fmt_bytes(buf, n, v);
  else dlh_fmt_ns(buf, n, v);
}

#define SVG_W 1200
#define ROW_H 17

typedef struct svgctx {
  const flame *f;
  FILE *out;
  int diff, side;
  uint64_t root;
  double minw;     /* smallest value drawn */
  uint32_t maxdepth;
  uint64_t *x;     /* left edge of each node */
} svgctx;

/* The colour's hash: FNV-1a without the command's per-process seed (rd_hash_str), so that the
 * same trace draws the same colours in every run. */
static uint64_t color_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ^ h >> 29;
}

static void color(const svgctx *c, const node *d, char *buf, size_t n) {
  const char *name = c->f->names[d->frame];
  if (c->diff) {
    double a = c->f->nodes[0].total[0] ? (double)d->total[0] / (double)c->f->nodes[0].total[0] : 0;
    double b = c->f->nodes[0].total[1] ? (double)d->total[1] / (double)c->f->nodes[0].total[1] : 0;
    double dl = b - a, m = dl < 0 ? -dl : dl;
    int k = (int)(255 - (m * 4 > 1 ? 1 : m * 4) * 200);
    if (dl > 0) snprintf(buf, n, "rgb(255,%d,%d)", k, k);
    else if (dl < 0) snprintf(buf, n, "rgb(%d,%d,255)", k, k);
    else snprintf(buf, n, "rgb(230,230,230)");
    return;
  }
  uint64_t h = color_hash(name);
  int r, g, b;
  int wt = c->f->o->weight;
  if (!d->child && wt == RD_W_WAIT && name[0] == '[') { /* what a thread waited in: blues */
    r = 70 + (int)(h % 40); g = 130 + (int)(h / 7 % 50); b = 210 + (int)(h / 13 % 45);
  } else if (!d->child && (wt == RD_W_GPU || wt == RD_W_BYTES) && d->depth > 1) { /* GPU work: greens */
    r = 60 + (int)(h % 60); g = 170 + (int)(h / 7 % 60); b = 80 + (int)(h / 13 % 40);
  } else if (!strncmp(name, "cuda", 4) || !strncmp(name, "cu", 2) || !strncmp(name, "nccl", 4) ||
             !strncmp(name, "cublas", 6) || !strncmp(name, "cudnn", 5)) { /* API: oranges */
    r = 230 + (int)(h % 25); g = 120 + (int)(h / 7 % 70); b = 30 + (int)(h / 13 % 30);
  } else { /* user frames: reds/yellows */
    r = 205 + (int)(h % 50); g = 80 + (int)(h / 7 % 120); b = 40 + (int)(h / 13 % 40);
  }
  snprintf(buf, n, "rgb(%d,%d,%d)", r, g, b);
}

static int svg_visit(void *ctx, uint32_t n) {
  svgctx *c = ctx;
  const node *d = &c->f->nodes[n];
  uint64_t w = d->total[c->side], x = c->x[n];
  if (n && (double)w < c->minw) return 0;
  if (n) {
    char col[40], v0[32], v1[32];
    if (d->depth > c->maxdepth) c->maxdepth = d->depth;
    fprintf(c->out, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\">"
                    "<title>", x, w, d->depth);
    xml_str(c->out, c->f->names[d->frame]);
    int wt = c->f->o->weight;
    fmt_val(v1, sizeof v1, w, wt);
    if (c->diff) {
      fmt_val(v0, sizeof v0, d->total[0], wt);
      double pa = c->f->nodes[0].total[0] ? 100.0 * (double)d->total[0] /
                                                 (double)c->f->nodes[0].total[0] : 0;
      double pb = c->root ? 100.0 * (double)w / (double)c->root : 0;
      fprintf(c->out, " (before %s, %.2f%%; after %s, %.2f%%; %+.2f%%)", v0, pa, v1, pb, pb - pa);
    } else {
      fprintf(c->out, " (%s, %.2f%%)", v1, c->root ? 100.0 * (double)w / (double)c->root : 0);
    }
    color(c, d, col, sizeof col);
    fprintf(c->out, "</title><rect height=\"%d\" rx=\"2\" fill=\"%s\"/><text></text></g>\n",
            ROW_H - 1, col);
  }
  return 1;
}

/* Children are laid out left to right from their parent's x. */
static void svg_kids(void *ctx, uint32_t n, const uint32_t *ch, size_t k) {
  svgctx *c = ctx;
  uint64_t cx = c->x[n];
  for (size_t i = 0; i < k; i++) {
    c->x[ch[i]] = cx;
    cx += c->f->nodes[ch[i]].total[c->side];
  }
}

/* The viewer: lays the frames out from data-x/data-w/data-d, zooms on click, searches,
 * shows the tooltip title. Written for dlhook. It works inside its own <svg> (the element
 * around the script), so that a page can hold several flame graphs (dlhook report); the
 * keyboard shortcuts are taken only when the SVG is the whole document. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function(){\n"
    "'use strict';\n"
    "var W=" "1200" ",RH=17,TOP=40,PAD=10;\n"
    "var me=document.currentScript,svg=me&&me.ownerSVGElement?me.ownerSVGElement:document.documentElement;\n"
    "var frames=[],total=0,zx=0,zw=0,zd=0,H=0,maxd=0;\n"
    "function q(id){return svg.querySelector('#'+id);}\n"
    "function init(){\n"
    "  var gs=svg.querySelectorAll('g.f');\n"
    "  for(var i=0;i<gs.length;i++){var g=gs[i];var f={g:g,x:+g.getAttribute('data-x'),"
    "w:+g.getAttribute('data-w'),d:+g.getAttribute('data-d'),"
    "name:g.firstChild.textContent.replace(/ \\([^()]*\\)$/,'')};frames.push(f);"
    "if(f.d>maxd)maxd=f.d;if(f.d==1)total+=f.w;"
    "g.addEventListener('click',(function(f){return function(e){zoom(f);e.stopPropagation();};})(f));"
    "g.addEventListener('mouseover',(function(f){return function(){"
    "q('details').textContent=f.g.firstChild.textContent;};})(f));}\n"
    "  H=+svg.getAttribute('height');zx=0;zw=total;zd=0;draw();\n"
    "  q('reset').addEventListener('click',function(){zoom(null);});\n"
    "  q('search').addEventListener('click',search);\n"
    "  if(svg===document.documentElement)document.addEventListener('keydown',function(e){"
    "if((e.ctrlKey||e.metaKey)&&e.key=='f'){e.preventDefault();search();}if(e.key=='Escape')zoom(null);});\n"
    "}\n"
    "function draw(){\n"
    "  var sc=(W-2*PAD)/(zw||1);\n"
    "  for(var i=0;i<frames.length;i++){var f=frames[i],g=f.g,r=g.childNodes[1],t=g.childNodes[2];\n"
    "    var vis=f.x+f.w>zx&&f.x<zx+zw&&(f.d>zd||(f.x<=zx&&f.x+f.w>=zx+zw));\n"
    "    var x=PAD+(Math.max(f.x,zx)-zx)*sc,w=(Math.min(f.x+f.w,zx+zw)-Math.max(f.x,zx))*sc;\n"
    "    if(!vis||w<0.3){g.style.display='none';continue;}g.style.display='';\n"
    "    var y=H-PAD-RH*f.d-20;r.setAttribute('x',x);r.setAttribute('y',y);r.setAttribute('width',w);\n"
    "    r.style.opacity=f.d<=zd?0.5:1;\n"
    "    t.setAttribute('x',x+3);t.setAttribute('y',y+RH-5);var n=Math.floor((w-6)/7);\n"
    "    t.textContent=n<3?'':(f.name.length<=n?f.name:f.name.substr(0,n-2)+'..');}\n"
    "}\n"
    "function zoom(f){if(!f||f.d==0){zx=0;zw=total;zd=0;}else{zx=f.x;zw=f.w;zd=f.d-1;}"
    "q('reset').style.display=f?'':'none';draw();}\n"
    "function search(){var re=prompt('Search (regular expression)','');if(re===null)return;\n"
    "  var m=0,rx;try{rx=new RegExp(re);}catch(e){alert(e);return;}var iv=[];\n"
    "  for(var i=0;i<frames.length;i++){var f=frames[i],r=f.g.childNodes[1];\n"
    "    if(!r.getAttribute('data-fill'))r.setAttribute('data-fill',r.getAttribute('fill'));\n"
    "    if(re!==''&&rx.test(f.name)){r.setAttribute('fill','rgb(230,0,230)');iv.push([f.x,f.x+f.w]);}\n"
    "    else r.setAttribute('fill',r.getAttribute('data-fill'));}\n"
    "  iv.sort(function(a,b){return a[0]-b[0];});var end=-1;\n"
    "  for(var j=0;j<iv.length;j++){if(iv[j][0]>=end){m+=iv[j][1]-iv[j][0];end=iv[j][1];}"
    "else if(iv[j][1]>end){m+=iv[j][1]-end;end=iv[j][1];}}\n"
    "  q('matched').textContent=re===''?'':'Matched: '+"
    "(total?(100*m/total).toFixed(2):0)+'%';}\n"
    "window.addEventListener('load',init);\n"
    "})();\n"
    "]]></script>\n";

void flame_write_svg(const flame *f, FILE *out, int diff, const char *title) {
  svgctx c = {f, out, diff, diff ? 1 : f->side, f->nodes[0].total[diff ? 1 : f->side], 0, 0,
              NULL};
  c.minw = (double)c.root * 0.3 / SVG_W; /* frames narrower than 0.3 px are left out */
  uint32_t maxdepth = 0;
  for (size_t i = 0; i < f->nnodes; i++)
    if ((double)f->nodes[i].total[c.side] >= c.minw && f->nodes[i].depth > maxdepth)
      maxdepth = f->nodes[i].depth;
  int h = (int)(maxdepth + 1) * ROW_H + 80;
  fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
               "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\">\n", SVG_W, h, SVG_W, h);
  fputs("<style type=\"text/css\">text{font-family:monospace;font-size:12px;fill:#000}"
        "g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
        "#title{font-size:17px;text-anchor:middle}.btn{cursor:pointer;fill:#36c}</style>\n",
        out);
  fputs(svg_script, out);
  fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", SVG_W, h);
  fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", SVG_W / 2);
  xml_str(out, title);
  char tv[32];
  fmt_val(tv, sizeof tv, c.root, f->o->weight);
  fprintf(out, " — total %s</text>\n", tv);
  fputs("<text id=\"reset\" class=\"btn\" x=\"10\" y=\"24\" style=\"display:none\">Reset zoom"
        "</text>\n", out);
  fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\">Search</text>\n", SVG_W - 60);
  fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", SVG_W - 160, h - 5);
  fprintf(out, "<text id=\"details\" x=\"10\" y=\"%d\"></text>\n", h - 5);
  c.x = rd_xmalloc(f->nnodes * sizeof *c.x);
  c.x[0] = 0;
  walker w = {svg_visit, svg_kids, &c};
  flame_walk(f, 0, &w);
  free(c.x);
  fputs("</svg>\n", out);
}
