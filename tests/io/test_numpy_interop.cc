// minijax tests (io): interoperability with numpy both ways, and a Python safetensors reader.
// Runs Debian's python3 with python3-numpy (setup.sh); values are compared bit for bit.
#include <gtest/gtest.h>

#include "io_test_util.h"

namespace {

using namespace iotest;

// Fails the test with the script's output unless it exited 0 and printed `expected`.
void expect_python_ok(const PythonResult& r, const std::string& expected) {
  EXPECT_EQ(r.rc, 0) << "python3 (" << python3() << ") failed; is python3-numpy installed (setup.sh)?\n" << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
}

TEST(NumpyInterop, NumpyReadsWhatMinijaxWrites) {
  ScratchDir dir;
  const auto tree = fixture(true);
  for (auto& [k, a] : tree) mj::save_npy(dir / (k + ".npy"), a);
  mj::save_npz(dir / "s.npz", tree);
  mj::save_npz(dir / "c.npz", tree, {.compressed = true});
  const std::string script = std::string(kPythonFixture) + R"PY(
import json, sys, zipfile
d = sys.argv[1]
for k, v in fixture.items():
    a = np.load(f'{d}/{k}.npy')
    assert same(a, v), (k, a, v)
assert same(np.load(f'{d}/h.npy'), BF16_BITS)
print('OK npy', len(fixture) + 1)
for name, method in (('s.npz', zipfile.ZIP_STORED), ('c.npz', zipfile.ZIP_DEFLATED)):
    p = f'{d}/{name}'
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None  # every member's CRC-32 checks out
        assert all(i.compress_type == method for i in z.infolist()), name
    with np.load(p) as npz:
        assert sorted(npz.files) == sorted(list(fixture) + ['h', '__minijax_dtypes__.json']), npz.files
        for k, v in fixture.items():
            assert same(npz[k], v), (name, k)
        assert same(npz['h'], BF16_BITS)
        assert json.loads(npz['__minijax_dtypes__.json']) == {'h': 'bfloat16'}
    print('OK', name)
)PY";
  const PythonResult r = run_python(dir, script, {dir.path.string()});
  expect_python_ok(r, "OK npy 8");
  expect_python_ok(r, "OK s.npz");
  expect_python_ok(r, "OK c.npz");
}

TEST(NumpyInterop, MinijaxReadsWhatNumpyWrites) {
  ScratchDir dir;
  const std::string script = std::string(kPythonFixture) + R"PY(
import sys
d = sys.argv[1]
for k, v in fixture.items():
    np.save(f'{d}/{k}.npy', v)
np.savez(f'{d}/s.npz', **fixture)
np.savez_compressed(f'{d}/c.npz', **fixture)
np.save(f'{d}/fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(f'{d}/big_endian.npy', np.array([1, -2], dtype='>i4'))
np.save(f'{d}/big_endian_f8.npy', np.array([0.1, -3.0], dtype='>f8'))
for version in ((2, 0), (3, 0)):
    with open(f'{d}/v{version[0]}.npy', 'wb') as f:
        np.lib.format.write_array(f, fixture['f'], version=version)
np.save(f'{d}/int64.npy', np.arange(3))
np.save(f'{d}/float16.npy', np.ones(2, dtype=np.float16))
np.savez(f'{d}/mixed.npz', ok=fixture['i'], bad=np.arange(2))
print('written')
)PY";
  expect_python_ok(run_python(dir, script, {dir.path.string()}), "written");
  const auto expect = fixture(false);
  for (auto& [k, v] : expect) EXPECT_TRUE(same_array(mj::load_npy(dir / (k + ".npy")), v)) << k;
  for (const char* npz : {"s.npz", "c.npz"}) {
    const auto all = mj::load_npz(dir / npz);
    ASSERT_EQ(all.size(), expect.size()) << npz;
    for (auto& [k, v] : expect) EXPECT_TRUE(same_array(all.at(k), v)) << npz << " " << k;
    const auto like = mj::load_npz(dir / npz, expect);
    for (auto& [k, v] : expect) EXPECT_TRUE(same_array(like.at(k), v)) << npz << " " << k;
  }
  EXPECT_TRUE(same_array(mj::load_npy(dir / "fortran.npy"), make<float>({2, 3}, {0, 1, 2, 3, 4, 5})));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "big_endian.npy"), make<int32_t>({2}, {1, -2})));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "big_endian_f8.npy"), make<double>({2}, {0.1, -3.0})));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "v2.npy"), expect.at("f")));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "v3.npy"), expect.at("f")));
  expect_io_error([&] { mj::load_npy(dir / "int64.npy"); }, {dir / "int64.npy", "unsupported dtype '<i8'", "int32"});
  expect_io_error([&] { mj::load_npy(dir / "float16.npy"); }, {"unsupported dtype '<f2'"});
  expect_io_error([&] { mj::load_npz(dir / "mixed.npz"); }, {dir / "mixed.npz", "key 'bad'", "'<i8'"});
}

// A reader written from the safetensors spec alone (struct + json + numpy.frombuffer) reads
// minijax's file: header length, JSON, metadata, dtypes, offsets tiling the data, alignment.
TEST(NumpyInterop, APythonSafetensorsReaderReadsMinijaxFiles) {
  ScratchDir dir;
  mj::save_safetensors(dir / "m.safetensors", fixture(true), {{"format", "np"}, {"epoch", "3"}});
  const std::string script = std::string(kPythonFixture) + R"PY(
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', b[:8])
assert n % 8 == 0 and b[8:9] == b'{', n
header = json.loads(b[8:8 + n].decode('utf-8'))
assert header.pop('__metadata__') == {'format': 'np', 'epoch': '3'}
data = b[8 + n:]
types = {'BOOL': np.dtype(np.bool_), 'I32': np.dtype('<i4'), 'U32': np.dtype('<u4'),
         'F32': np.dtype('<f4'), 'F64': np.dtype('<f8'), 'BF16': np.dtype('<u2')}
names = {'b': 'BOOL', 'i': 'I32', 'u': 'U32', 'f': 'F32', 'd': 'F64', 's': 'F32', 'e': 'F32', 'h': 'BF16'}
pos = 0
for begin, end in sorted(tuple(v['data_offsets']) for v in header.values()):
    assert begin == pos, (begin, pos)
    pos = end
assert pos == len(data), (pos, len(data))
for k, v in header.items():
    assert v['dtype'] == names[k], (k, v)
    begin, end = v['data_offsets']
    dt = types[v['dtype']]
    assert begin % dt.itemsize == 0, (k, begin)
    a = np.frombuffer(data[begin:end], dtype=dt).reshape(v['shape'])
    assert same(a, BF16_BITS if k == 'h' else fixture[k]), k
print('OK safetensors', len(header))
)PY";
  expect_python_ok(run_python(dir, script, {dir / "m.safetensors"}), "OK safetensors 8");
}

}  // namespace
