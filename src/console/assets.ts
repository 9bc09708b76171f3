/**
 * The console's own style, beside the sign-in pages' stylesheet it builds on: a wider page with
 * a bar of sections, tables, and the chart's colours (SVG takes them from here: the CSP allows
 * no inline style).
 */
export const CONSOLE_STYLESHEET = `body.console{justify-content:flex-start;padding-top:0}
.skip{position:absolute;left:-9999px;top:8px;background:var(--card);color:var(--accent);padding:8px 12px;border-radius:8px;z-index:2}
.skip:focus{left:16px}
.console-bar{width:100%;max-width:1100px;display:flex;flex-wrap:wrap;align-items:center;gap:8px 24px;padding:14px 4px;margin-bottom:12px}
.console-bar .brand{margin:0}
.tag{font-size:12px;font-weight:600;padding:1px 8px;border-radius:99px;background:var(--info-bg);color:var(--info)}
.sections{display:flex;flex-wrap:wrap;gap:4px 6px;list-style:none;margin:0;padding:0}
.sections a{display:inline-block;padding:6px 10px;border-radius:8px;color:var(--text);text-decoration:none;font-weight:600;font-size:15px}
.sections a:hover{background:var(--card)}
.sections a[aria-current=page]{background:var(--card);color:var(--accent);box-shadow:inset 0 -2px 0 var(--accent)}
.who{margin-left:auto;display:flex;gap:10px;align-items:center}
.who .meta{flex-basis:auto}
.card.console-card{max-width:1100px}
.console-card:focus{outline:none}
table{width:100%;border-collapse:collapse;font-size:14px}
caption{text-align:left;font-weight:600;padding:0 0 8px;color:var(--muted)}
th,td{text-align:left;padding:8px 10px;border-top:1px solid var(--line);vertical-align:top}
thead th{border-top:0;color:var(--muted);font-size:13px;font-weight:600;white-space:nowrap}
tbody th{font-weight:600}
.table-box{overflow-x:auto;border:1px solid var(--line);border-radius:10px;padding:8px 4px 4px}
.table-box.tall{max-height:300px;overflow-y:auto;flex:0 0 260px}
.table-box:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.wrap{overflow-wrap:anywhere;max-width:320px}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
.search{margin-bottom:16px;max-width:520px}
.search-row{display:flex;gap:8px;margin-top:6px}
.search-row .secondary{width:auto}
input[type=search]{flex:1;padding:10px 12px;font:inherit;color:var(--text);background:var(--card);border:1px solid var(--line);border-radius:8px}
select{height:46px;padding:0 10px;font:inherit;color:var(--text);background:var(--card);border:1px solid var(--line);border-radius:8px}
select:focus-visible,input[type=search]:focus-visible,input[type=radio]:focus-visible,input[type=checkbox]:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.narrow{max-width:520px}
.choice{border:0;padding:0;margin:8px 0 0}
.choice legend{font-weight:600;font-size:14px;padding:0}
label.plain{font-weight:400;font-size:15px;display:flex;gap:8px;align-items:center;margin-top:6px}
.pager{margin:12px 0 0}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:12px 24px;margin:0 0 16px}
.facts div{min-width:0}
.facts dt{color:var(--muted);font-size:13px}
.facts dd{margin:2px 0 0;font-weight:600;overflow-wrap:anywhere}
.row-actions{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0}
.row-actions .secondary,.row-actions .primary{width:auto;margin-top:0}
.button-link{display:inline-block;padding:9px 16px;border:1px solid var(--line);border-radius:8px;color:var(--text);text-decoration:none;font-weight:600}
.button-link:hover{border-color:var(--accent)}
.button-link.danger{border-color:var(--error);color:var(--error)}
a.danger{color:var(--error)}
.danger-button{background:var(--error);color:#fff}
.badge.off{background:var(--error-bg);color:var(--error)}
.figures{display:flex;flex-wrap:wrap;gap:16px;list-style:none;margin:0 0 8px;padding:0}
.figures li{flex:1 1 180px;border:1px solid var(--line);border-radius:10px;padding:14px 16px;display:flex;flex-direction:column}
.figure{font-size:30px;font-weight:700;line-height:1.1}
.figures .meta{flex-basis:auto}
.chart-row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.chart{flex:1 1 520px;min-width:0;height:auto;max-width:100%}
.chart .tick line{stroke:var(--line)}
.chart .axis{stroke:var(--muted)}
.chart text{fill:var(--muted);font-size:11px;font-family:inherit}
.chart .ok,.swatch.ok{fill:var(--accent);background:var(--accent)}
.chart .failed,.swatch.failed{fill:#d9534f;background:#d9534f}
.legend{display:flex;gap:8px;align-items:center;font-size:13px;color:var(--muted);margin:0 0 8px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;margin-left:8px}
.filters{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:flex-end}
.filters div{display:flex;flex-direction:column;gap:4px}
.filters input{min-width:200px}
.filter-go .secondary{width:auto}
.filters + .hint{margin:6px 0 14px}
.confirm{border-top:0;margin-top:0}
.confirm h2{margin-top:0;font-size:20px}
textarea.secret{width:100%;font:14px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;padding:10px;border:1px solid var(--line);border-radius:8px;background:var(--card);color:var(--text)}
`
