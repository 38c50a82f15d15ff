"""Writes sigs.h: each extern "C" kernel of cuda/api.cu (the per-group MSM_KERNELS macro
expanded for g1 and g2) with its arguments' kinds: u a uint32_t, p a pointer, f an fr_t."""
import re
import sys

api = open(sys.argv[1]).read()
m = re.search(r'#define MSM_KERNELS\(G, field, THREADS, BLOCKS\)(.*?)\n\n', api, re.S)
body = m.group(1).replace('\\\n', '\n')
text = api[:m.start()] + api[m.end():]
for group, field in re.findall(r'^MSM_KERNELS\((\w+), (\w+),', api, re.M):
    text += re.sub(r'\bfield\b', field, body.replace('##G', group))
text = re.sub(r'//.*', '', text)
rows = []
for name, params in re.findall(r'extern "C" __global__ void\s*(?:__launch_bounds__\([^)]*\))?\s*(\w+)\s*\(([^)]*)\)', text):
    kinds = ''
    for p in filter(None, (p.strip() for p in params.split(','))):
        kinds += 'p' if '*' in p else 'u' if p.startswith('uint32_t') else 'f' if p.startswith('fr_t') else '?'
    rows.append('{"%s", "%s"},' % (name, kinds))
open(sys.argv[2], 'w').write('static const char* SIGS[][2] = {\n' + '\n'.join(rows) + '\n{0, 0}};\n')
