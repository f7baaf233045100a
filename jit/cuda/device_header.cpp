#include "jit/cuda/device_header.h"

namespace tritium::jit::cuda {

const char* device_header() {
  return R"TTHDR(// ---- tritium device header ----
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

#define TT_INLINE __device__ __forceinline__

// f16 / bf16: bit containers; arithmetic happens in f32 and rounds back after every op (but + - *,
// below: natively).
struct tt_f16 { uint16_t bits; };
struct tt_bf16 { uint16_t bits; };
TT_INLINE float tt_to_f32(float x) { return x; }
TT_INLINE float tt_to_f32(tt_f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
TT_INLINE float tt_to_f32(tt_bf16 h) { return __uint_as_float(((uint32_t)h.bits) << 16); }
TT_INLINE tt_f16 tt_f16_from(float f) { uint16_t b; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f)); return tt_f16{b}; }
// f16 + - * in one instruction (HADD2 / HMUL2), as Triton computes f16: the same bits as the f32
// op rounded back (f32's 24 bits >= 2 x 11 + 2 make that double rounding innocuous), without the
// two conversions in and one out.
// (An operand that is not a tt_f16 expression, a float literal, goes through f32 as before.)
#define TT_HOP(NAME, OP, C)                                                                   \
  TT_INLINE tt_f16 NAME(tt_f16 a, tt_f16 b) {                                                 \
    uint16_t r;                                                                               \
    asm(OP ".rn.f16 %0, %1, %2;" : "=h"(r) : "h"(a.bits), "h"(b.bits));                       \
    return tt_f16{r};                                                                         \
  }                                                                                           \
  template <class A, class B> TT_INLINE tt_f16 NAME(A a, B b) { return tt_f16_from(tt_to_f32(a) C tt_to_f32(b)); }
TT_HOP(tt_hadd, "add", +)
TT_HOP(tt_hsub, "sub", -)
TT_HOP(tt_hmul, "mul", *)
#undef TT_HOP
TT_INLINE tt_bf16 tt_bf16_from(float f) {  // round to nearest even; NaN stays a quiet NaN (0x7fc0, as on the CPU)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // One cvt (a matmul's bf16 epilogue converts 128 values a thread; the integer rounding took 5
  // instructions each).
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  // NaN test as a float compare: one FSETP.NAN, where the bit test took LOP3 + ISETP (2026-11-26:
  // the fix-up was 38 % of poly_norm's forward instructions).
  return tt_bf16{f != f ? (uint16_t)0x7fc0 : b};
#else
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return tt_bf16{(uint16_t)0x7fc0};
  u += 0x7fffu + ((u >> 16) & 1u);
  return tt_bf16{(uint16_t)(u >> 16)};
#endif
}
// The same rounding without the NaN fix-up (a NaN stays cvt's 0x7fff): for values only tensor-core
// dots read (lowering/values.cpp), where a NaN's payload cannot show - attention's P, one FSETP,
// SEL and PRMT an element fewer.
TT_INLINE tt_bf16 tt_bf16_from_rn(float f) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return tt_bf16{b};
#else
  return tt_bf16_from(f);
#endif
}
// bf16 + - * in one instruction for values whose NaN bits no one sees (scalar_expr's nan_unseen):
// add/sub/mul.rn.bf16 on sm_90, fma.rn.bf16 (a*b-0, a*1+b, b*-1+a) on sm_80, both HFMA2-pipe
// instructions. Through f32 each op was unpack, FMUL/FADD and cvt.rn.bf16.f32 - an F2F, which
// issues at the conversion rate (16 a clock an SM, an eighth of FMUL's): poly_norm's forward ran
// into that limit (175 F2F a thread). The same bits as the f32 op rounded back (the f32 result of
// two bf16 is exact or far from a bf16 tie); NaN is the canonical 0x7fff, as tt_bf16_from_rn's.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TT_BOP_ASM(OP, FMA_ARGS) asm(OP ".rn.bf16 %0, %1, %2;" : "=h"(r) : "h"(a.bits), "h"(b.bits))
#elif __CUDA_ARCH__ >= 800
#define TT_BOP_ASM(OP, FMA_ARGS) asm("fma.rn.bf16 %0, " FMA_ARGS ";" : "=h"(r) : "h"(a.bits), "h"(b.bits), "h"((uint16_t)0x8000), "h"((uint16_t)0x3f80), "h"((uint16_t)0xbf80))
#endif
#define TT_BOP(NAME, OP, C, FMA_ARGS)                                                          \
  TT_INLINE tt_bf16 NAME(tt_bf16 a, tt_bf16 b) {                                              \
    uint16_t r;                                                                               \
    TT_BOP_ASM(OP, FMA_ARGS);                                                                 \
    return tt_bf16{r};                                                                        \
  }                                                                                           \
  template <class A, class B> TT_INLINE tt_bf16 NAME(A a, B b) { return tt_bf16_from_rn(tt_to_f32(a) C tt_to_f32(b)); }
#ifdef TT_BOP_ASM
TT_BOP(tt_badd_rn, "add", +, "%1, %4, %2")
TT_BOP(tt_bsub_rn, "sub", -, "%2, %5, %1")
TT_BOP(tt_bmul_rn, "mul", *, "%1, %2, %3")
#else  // before sm_80: through f32
template <class A, class B> TT_INLINE tt_bf16 tt_badd_rn(A a, B b) { return tt_bf16_from_rn(tt_to_f32(a) + tt_to_f32(b)); }
template <class A, class B> TT_INLINE tt_bf16 tt_bsub_rn(A a, B b) { return tt_bf16_from_rn(tt_to_f32(a) - tt_to_f32(b)); }
template <class A, class B> TT_INLINE tt_bf16 tt_bmul_rn(A a, B b) { return tt_bf16_from_rn(tt_to_f32(a) * tt_to_f32(b)); }
#endif
#undef TT_BOP
#undef TT_BOP_ASM
// fp8 (e4m3 without infinities, e5m2): decoding is exact; encoding rounds to nearest even and
// saturates to the largest finite value, NaN -> 0x7f (cvt.rn.satfinite on sm_89+; the same
// arithmetic as the CPU backend before).
struct tt_f8e4m3 { uint8_t bits; };
struct tt_f8e5m2 { uint8_t bits; };
TT_INLINE float tt_to_f32(tt_f8e5m2 h) { return tt_to_f32(tt_f16{(uint16_t)(h.bits << 8)}); }
TT_INLINE float tt_to_f32(tt_f8e4m3 h) {  // magnitude bits as an f16 read 2^-8 of the value
  uint32_t mag = h.bits & 0x7fu;
  float f = mag == 0x7fu ? __uint_as_float(0x7fc00000u) : tt_to_f32(tt_f16{(uint16_t)(mag << 7)}) * 256.0f;
  return __uint_as_float(__float_as_uint(f) | ((uint32_t)(h.bits & 0x80u) << 24));
}
TT_INLINE uint8_t tt_fp8_soft(float x, int mbits, int bias, float max_finite) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7f;
  uint32_t sign = (u >> 24) & 0x80u;
  float a = fminf(fabsf(x), max_finite);
  uint32_t code;
  if (a < __uint_as_float((uint32_t)(128 - bias) << 23)) {  // subnormal: a * 2^(bias - 1 + mbits), rounded
    code = (uint32_t)rintf(a * __uint_as_float((uint32_t)(126 + bias + mbits) << 23));
  } else {
    int drop = 23 - mbits;
    uint32_t ua = __float_as_uint(a);
    ua += (1u << (drop - 1)) - 1u + ((ua >> drop) & 1u);
    code = (ua >> drop) - ((uint32_t)(127 - bias) << mbits);
  }
  return (uint8_t)(code | sign);
}
#if __CUDA_ARCH__ >= 890
#define TT_FP8_FROM(T, PTX, MBITS, BIAS, MAX) \
  TT_INLINE T T##_from(float x) { uint16_t r; asm("cvt.rn.satfinite." PTX "x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x)); return T{(uint8_t)r}; }
#else
#define TT_FP8_FROM(T, PTX, MBITS, BIAS, MAX) TT_INLINE T T##_from(float x) { return T{tt_fp8_soft(x, MBITS, BIAS, MAX)}; }
#endif
TT_FP8_FROM(tt_f8e4m3, "e4m3", 3, 7, 448.0f)
TT_FP8_FROM(tt_f8e5m2, "e5m2", 2, 15, 57344.0f)

template <class T> struct tt_unsigned_of;
template <> struct tt_unsigned_of<bool> { typedef uint8_t type; };
template <> struct tt_unsigned_of<int8_t> { typedef uint8_t type; };
template <> struct tt_unsigned_of<uint8_t> { typedef uint8_t type; };
template <> struct tt_unsigned_of<int16_t> { typedef uint16_t type; };
template <> struct tt_unsigned_of<uint16_t> { typedef uint16_t type; };
template <> struct tt_unsigned_of<int32_t> { typedef uint32_t type; };
template <> struct tt_unsigned_of<uint32_t> { typedef uint32_t type; };
template <> struct tt_unsigned_of<int64_t> { typedef uint64_t type; };
template <> struct tt_unsigned_of<uint64_t> { typedef uint64_t type; };

template <class To, class From> TT_INLINE To tt_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between types of different widths");
  union { From f; To t; } u;
  u.f = x;
  return u.t;
}

// Integer helpers, as the CPU backend defines them: division by zero yields the dividend (rem 0)
// and INT_MIN / -1 wraps, instead of undefined behaviour; shifts past the width give 0 (or the
// sign for arithmetic right shifts).
template <class T> TT_INLINE bool tt_is_signed() { return (T)(-1) < (T)0; }
template <class T> TT_INLINE T tt_div(T a, T b) {
  typedef typename tt_unsigned_of<T>::type U;
  if (b == 0) return a;
  if (tt_is_signed<T>() && b == (T)(-1)) return (T)(U)(0 - (U)a);
  return (T)(a / b);
}
template <class T> TT_INLINE T tt_rem(T a, T b) {
  if (b == 0) return 0;
  if (tt_is_signed<T>() && b == (T)(-1)) return 0;
  return (T)(a % b);
}
// Division of 32-bit integers by a divisor a loop does not change (the generator makes its magic
// numbers once, before the loop): a multiply-high and two shifts instead of the ~25 instructions
// and MUFU.RCP of a division by a run-time value (Granlund and Montgomery's round-up method, on
// magnitudes; the same results as tt_div / tt_rem, division by zero and -1 included).
struct tt_fastdiv { uint32_t m; int s1, s2; int32_t d; bool is_signed; };
TT_INLINE tt_fastdiv tt_fastdiv_of(int32_t d, bool is_signed) {
  tt_fastdiv f;
  f.d = d;
  f.is_signed = is_signed;
  uint32_t ad = is_signed && d < 0 ? 0u - (uint32_t)d : (uint32_t)d;
  if (ad == 0) ad = 1;
  const int l = ad == 1 ? 0 : 32 - __clz(ad - 1);  // ceil(log2(ad))
  f.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - ad)) / ad) + 1u;
  f.s1 = l > 0 ? 1 : 0;
  f.s2 = l > 0 ? l - 1 : 0;
  return f;
}
TT_INLINE uint32_t tt_udiv_magic(uint32_t n, const tt_fastdiv& f) {
  const uint32_t t = __umulhi(f.m, n);
  return (t + ((n - t) >> f.s1)) >> f.s2;
}
template <class T> TT_INLINE T tt_div_fast(T a, const tt_fastdiv& f) {
  if (f.d == 0) return a;
  if (!f.is_signed) return (T)tt_udiv_magic((uint32_t)a, f);
  const int32_t x = (int32_t)a;
  const uint32_t q = tt_udiv_magic(x < 0 ? 0u - (uint32_t)x : (uint32_t)x, f);
  return (T)(int32_t)(((x ^ f.d) < 0) ? 0u - q : q);
}
template <class T> TT_INLINE T tt_rem_fast(T a, const tt_fastdiv& f) {
  if (f.d == 0) return 0;
  return (T)(uint32_t)((uint32_t)a - (uint32_t)tt_div_fast<T>(a, f) * (uint32_t)f.d);
}
template <class T, class S> TT_INLINE T tt_shl(T a, S b) {
  typedef typename tt_unsigned_of<T>::type U;
  return (uint64_t)b >= sizeof(T) * 8 ? (T)0 : (T)(U)((U)a << (int)b);
}
template <class T, class S> TT_INLINE T tt_shr(T a, S b) {
  const uint64_t bits = sizeof(T) * 8;
  if (tt_is_signed<T>()) return (T)(a >> (int)((uint64_t)b >= bits ? bits - 1 : (uint64_t)b));
  return (uint64_t)b >= bits ? (T)0 : (T)(a >> (int)b);
}
template <class T> TT_INLINE T tt_min(T a, T b) { return b < a ? b : a; }
template <class T> TT_INLINE T tt_max(T a, T b) { return a < b ? b : a; }
template <class T> TT_INLINE T tt_abs(T a) {
  typedef typename tt_unsigned_of<T>::type U;
  return a < (T)0 ? (T)(U)(0 - (U)a) : a;
}
template <class T> TT_INLINE T tt_umulhi(T a, T b) {
  typedef typename tt_unsigned_of<T>::type U;
  if constexpr (sizeof(T) == 8) return (T)__umul64hi((uint64_t)(U)a, (uint64_t)(U)b);
  else {
  uint64_t p = (uint64_t)(U)a * (uint64_t)(U)b;
  return (T)(U)(p >> (sizeof(T) * 8));
  }
}
TT_INLINE double tt_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// Warp shuffles of every register type.
TT_INLINE int32_t tt_shfl_xor(int32_t v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
TT_INLINE uint32_t tt_shfl_xor(uint32_t v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
TT_INLINE int64_t tt_shfl_xor(int64_t v, int m) { return __shfl_xor_sync(0xffffffffu, (long long)v, m); }
TT_INLINE uint64_t tt_shfl_xor(uint64_t v, int m) { return __shfl_xor_sync(0xffffffffu, (unsigned long long)v, m); }
TT_INLINE float tt_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
TT_INLINE double tt_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
TT_INLINE bool tt_shfl_xor(bool v, int m) { return __shfl_xor_sync(0xffffffffu, (int)v, m) != 0; }
TT_INLINE int8_t tt_shfl_xor(int8_t v, int m) { return (int8_t)__shfl_xor_sync(0xffffffffu, (int)v, m); }
TT_INLINE uint8_t tt_shfl_xor(uint8_t v, int m) { return (uint8_t)__shfl_xor_sync(0xffffffffu, (int)v, m); }
TT_INLINE int16_t tt_shfl_xor(int16_t v, int m) { return (int16_t)__shfl_xor_sync(0xffffffffu, (int)v, m); }
TT_INLINE uint16_t tt_shfl_xor(uint16_t v, int m) { return (uint16_t)__shfl_xor_sync(0xffffffffu, (int)v, m); }
TT_INLINE tt_f16 tt_shfl_xor(tt_f16 v, int m) { return tt_f16{(uint16_t)__shfl_xor_sync(0xffffffffu, (int)v.bits, m)}; }
TT_INLINE tt_bf16 tt_shfl_xor(tt_bf16 v, int m) { return tt_bf16{(uint16_t)__shfl_xor_sync(0xffffffffu, (int)v.bits, m)}; }
TT_INLINE tt_f8e4m3 tt_shfl_xor(tt_f8e4m3 v, int m) { return tt_f8e4m3{(uint8_t)__shfl_xor_sync(0xffffffffu, (int)v.bits, m)}; }
TT_INLINE tt_f8e5m2 tt_shfl_xor(tt_f8e5m2 v, int m) { return tt_f8e5m2{(uint8_t)__shfl_xor_sync(0xffffffffu, (int)v.bits, m)}; }
template <class T> TT_INLINE T* tt_shfl_xor(T* v, int m) {
  return (T*)__shfl_xor_sync(0xffffffffu, (unsigned long long)v, m);
}
// From the lane `d` below (a lane below `d` keeps its own value): the scans' warp step.
TT_INLINE int32_t tt_shfl_up(int32_t v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
TT_INLINE uint32_t tt_shfl_up(uint32_t v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
TT_INLINE int64_t tt_shfl_up(int64_t v, int d) { return __shfl_up_sync(0xffffffffu, (long long)v, d); }
TT_INLINE uint64_t tt_shfl_up(uint64_t v, int d) { return __shfl_up_sync(0xffffffffu, (unsigned long long)v, d); }
TT_INLINE float tt_shfl_up(float v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
TT_INLINE double tt_shfl_up(double v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
TT_INLINE bool tt_shfl_up(bool v, int d) { return __shfl_up_sync(0xffffffffu, (int)v, d) != 0; }
TT_INLINE int8_t tt_shfl_up(int8_t v, int d) { return (int8_t)__shfl_up_sync(0xffffffffu, (int)v, d); }
TT_INLINE uint8_t tt_shfl_up(uint8_t v, int d) { return (uint8_t)__shfl_up_sync(0xffffffffu, (int)v, d); }
TT_INLINE int16_t tt_shfl_up(int16_t v, int d) { return (int16_t)__shfl_up_sync(0xffffffffu, (int)v, d); }
TT_INLINE uint16_t tt_shfl_up(uint16_t v, int d) { return (uint16_t)__shfl_up_sync(0xffffffffu, (int)v, d); }
TT_INLINE tt_f16 tt_shfl_up(tt_f16 v, int d) { return tt_f16{(uint16_t)__shfl_up_sync(0xffffffffu, (int)v.bits, d)}; }
TT_INLINE tt_bf16 tt_shfl_up(tt_bf16 v, int d) { return tt_bf16{(uint16_t)__shfl_up_sync(0xffffffffu, (int)v.bits, d)}; }
TT_INLINE tt_f8e4m3 tt_shfl_up(tt_f8e4m3 v, int d) { return tt_f8e4m3{(uint8_t)__shfl_up_sync(0xffffffffu, (int)v.bits, d)}; }
TT_INLINE tt_f8e5m2 tt_shfl_up(tt_f8e5m2 v, int d) { return tt_f8e5m2{(uint8_t)__shfl_up_sync(0xffffffffu, (int)v.bits, d)}; }
template <class T> TT_INLINE T* tt_shfl_up(T* v, int d) {
  return (T*)__shfl_up_sync(0xffffffffu, (unsigned long long)v, d);
}

// Atomics. Native instructions where the hardware has them (the code generator picks those);
// everything else through a compare-and-swap loop, on the containing 32-bit word for 8- and
// 16-bit types.
enum { TT_ADD = 0, TT_MAX = 1, TT_MIN = 2, TT_AND = 3, TT_OR = 4, TT_XOR = 5, TT_XCHG = 6 };
template <int OP, class T> TT_INLINE T tt_apply(T a, T b) {
  if (OP == TT_ADD) return (T)(a + b);
  if (OP == TT_MAX) return tt_max(a, b);
  if (OP == TT_MIN) return tt_min(a, b);
  if (OP == TT_AND) return (T)(a & b);
  if (OP == TT_OR) return (T)(a | b);
  if (OP == TT_XOR) return (T)(a ^ b);
  return b;
}
template <int OP> TT_INLINE float tt_apply_f(float a, float b) {
  if (OP == TT_ADD) return a + b;
  if (OP == TT_MAX) return fmaxf(a, b);
  if (OP == TT_MIN) return fminf(a, b);
  return b;
}
template <int OP> TT_INLINE float tt_apply(float a, float b) { return tt_apply_f<OP>(a, b); }
template <int OP> TT_INLINE double tt_apply(double a, double b) {
  if (OP == TT_ADD) return a + b;
  if (OP == TT_MAX) return fmax(a, b);
  if (OP == TT_MIN) return fmin(a, b);
  return b;
}
template <int OP> TT_INLINE tt_f16 tt_apply(tt_f16 a, tt_f16 b) {
  return OP == TT_XCHG ? b : tt_f16_from(tt_apply_f<OP>(tt_to_f32(a), tt_to_f32(b)));
}
template <int OP> TT_INLINE tt_bf16 tt_apply(tt_bf16 a, tt_bf16 b) {
  return OP == TT_XCHG ? b : tt_bf16_from(tt_apply_f<OP>(tt_to_f32(a), tt_to_f32(b)));
}

template <int N> struct tt_uint_of_size;
template <> struct tt_uint_of_size<1> { typedef uint8_t type; };
template <> struct tt_uint_of_size<2> { typedef uint16_t type; };
template <> struct tt_uint_of_size<4> { typedef uint32_t type; };
template <> struct tt_uint_of_size<8> { typedef uint64_t type; };
template <class T> TT_INLINE bool tt_bitcast_eq(T a, T b) {
  typedef typename tt_uint_of_size<sizeof(T)>::type B;
  return tt_bitcast<B>(a) == tt_bitcast<B>(b);
}

// Compare-and-swap of any 1-, 2-, 4- or 8-byte type; returns the old value.
template <class T> TT_INLINE T tt_atomic_cas(T* p, T cmp, T val) {
  if constexpr (sizeof(T) == 8) {
    return tt_bitcast<T>(atomicCAS((unsigned long long*)p, tt_bitcast<unsigned long long>(cmp),
                                   tt_bitcast<unsigned long long>(val)));
  } else if constexpr (sizeof(T) == 4) {
    return tt_bitcast<T>(atomicCAS((unsigned int*)p, tt_bitcast<unsigned int>(cmp), tt_bitcast<unsigned int>(val)));
  } else {
    // The containing aligned 32-bit word.
    unsigned long long addr = (unsigned long long)p;
    unsigned int* word = (unsigned int*)(addr & ~3ull);
    const unsigned int shift = (unsigned int)(addr & 3ull) * 8u;
    const unsigned int mask = (sizeof(T) == 2 ? 0xffffu : 0xffu) << shift;
    typedef typename tt_uint_of_size<sizeof(T)>::type B;
    unsigned int c = (unsigned int)tt_bitcast<B>(cmp);
    unsigned int v = (unsigned int)tt_bitcast<B>(val);
    unsigned int old = *(volatile unsigned int*)word;
    while (true) {
      unsigned int cur = (old & mask) >> shift;
      if (cur != c) break;
      unsigned int seen = atomicCAS(word, old, (old & ~mask) | (v << shift));
      if (seen == old) break;
      old = seen;
    }
    unsigned int cur = (old & mask) >> shift;
    return tt_bitcast<T>((B)cur);
  }
}
template <class T> TT_INLINE T tt_load_relaxed(T* p) {
  typedef typename tt_uint_of_size<sizeof(T)>::type B;
  return tt_bitcast<T>(*(volatile B*)p);
}
template <int OP, class T> TT_INLINE T tt_atomic_rmw(T* p, T v) {
  T old = tt_load_relaxed(p);
  while (true) {
    T seen = tt_atomic_cas(p, old, tt_apply<OP>(old, v));
    if (tt_bitcast_eq(seen, old)) return seen;
    old = seen;
  }
}
// 16-bit float adds in one instruction (f16 since sm_60, bf16 since sm_90): the emulation above
// is a 32-bit CAS loop per element, which retries under contention (many lanes adding into one
// gradient row). ptxas makes the scalar 16-bit atom/red (atom.add.noftz.bf16) a CAS loop too
// (sm_90a SASS: ATOMG.E.CAS); only the x2 forms are one ATOMG/REDG .ADD.BF16x2 / .F16x2. So the
// value goes into its half of the aligned 32-bit pair and the other half adds -0.0, which leaves
// every value as it is (x + -0.0 == x, -0.0 included) but a NaN, whose payload may come back
// canonical (PyTorch's fastAtomicAdd pairs the same way). Same rounding: each add is rounded once
// to the type (.noftz keeps subnormals). Pointers are global memory (kernel arguments).
TT_INLINE uint32_t tt_half_pair(uint16_t bits, bool high) {
  return high ? (uint32_t(bits) << 16) | 0x8000u : 0x80000000u | bits;
}
#define TT_ADD16(T, S)                                                                                   \
  TT_INLINE T tt_atomic_add_16(T* p, T v) {                                                              \
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);                               \
    const bool high = (a & 2) != 0;                                                                      \
    uint32_t old;                                                                                        \
    asm volatile("atom.global.add.noftz." S "x2 %0, [%1], %2;"                                           \
                 : "=r"(old) : "l"(a & ~3ull), "r"(tt_half_pair(v.bits, high)) : "memory");             \
    return T{uint16_t(high ? old >> 16 : old & 0xffffu)};                                                \
  }                                                                                                      \
  /* the same when nobody reads the old value: one REDG */                                              \
  TT_INLINE void tt_red_add_16(T* p, T v) {                                                              \
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);                               \
    asm volatile("red.global.add.noftz." S "x2 [%0], %1;" ::"l"(a & ~3ull), "r"(tt_half_pair(v.bits, (a & 2) != 0)) \
                 : "memory");                                                                            \
  }
TT_ADD16(tt_f16, "f16")
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
TT_ADD16(tt_bf16, "bf16")
#else
TT_INLINE tt_bf16 tt_atomic_add_16(tt_bf16* p, tt_bf16 v) { return tt_atomic_rmw<TT_ADD, tt_bf16>(p, v); }
TT_INLINE void tt_red_add_16(tt_bf16* p, tt_bf16 v) { (void)tt_atomic_rmw<TT_ADD, tt_bf16>(p, v); }
#endif
#undef TT_ADD16
// N contiguous float adds whose old values nobody reads (a gradient scatter), p aligned to N
// lanes: one red of up to 16 bytes on sm_90 (.v2/.v4/.v8 f16/bf16, .v2/.v4 f32; Triton's
// vectorised atomic_add), f16 pairs as f16x2 before, else lane by lane. Each lane is still its
// own atomic add, rounded once.
template <int N> struct tt_int_c {};
template <class A, class B> struct tt_same { static constexpr bool value = false; };
template <class A> struct tt_same<A, A> { static constexpr bool value = true; };
#define TT_RED16(T, S)                                                                                        \
  TT_INLINE void tt_red_add_n(T* p, const T* v, tt_int_c<2>) {                                                \
    asm volatile("red.global.add.noftz.v2." S " [%0], {%1, %2};" ::"l"(p), "h"(v[0].bits), "h"(v[1].bits)    \
                 : "memory");                                                                                 \
  }                                                                                                           \
  TT_INLINE void tt_red_add_n(T* p, const T* v, tt_int_c<4>) {                                                \
    asm volatile("red.global.add.noftz.v4." S " [%0], {%1, %2, %3, %4};" ::"l"(p), "h"(v[0].bits),           \
                 "h"(v[1].bits), "h"(v[2].bits), "h"(v[3].bits) : "memory");                                  \
  }                                                                                                           \
  TT_INLINE void tt_red_add_n(T* p, const T* v, tt_int_c<8>) {                                                \
    asm volatile("red.global.add.noftz.v8." S " [%0], {%1, %2, %3, %4, %5, %6, %7, %8};" ::"l"(p),            \
                 "h"(v[0].bits), "h"(v[1].bits), "h"(v[2].bits), "h"(v[3].bits), "h"(v[4].bits), "h"(v[5].bits), \
                 "h"(v[6].bits), "h"(v[7].bits) : "memory");                                                  \
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
TT_RED16(tt_f16, "f16")
TT_RED16(tt_bf16, "bf16")
TT_INLINE void tt_red_add_n(float* p, const float* v, tt_int_c<2>) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v[0]), "f"(v[1]) : "memory");
}
TT_INLINE void tt_red_add_n(float* p, const float* v, tt_int_c<4>) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
               : "memory");
}
template <int N, class T> TT_INLINE void tt_red_add_v(T* p, const T* v) {
  if constexpr (N * sizeof(T) > 16) {
    tt_red_add_v<N / 2>(p, v);
    tt_red_add_v<N / 2>(p + N / 2, v + N / 2);
  } else {
    tt_red_add_n(p, v, tt_int_c<N>{});
  }
}
#else
template <int N, class T> TT_INLINE void tt_red_add_v(T* p, const T* v) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 2) {
      if constexpr (tt_same<T, tt_f16>::value) {
        if (i % 2 == 0) {
          const uint32_t pair = uint32_t(v[i].bits) | (uint32_t(v[i + 1].bits) << 16);
          asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(p + i), "r"(pair) : "memory");
        }
      } else {
        (void)tt_atomic_add_16(p + i, v[i]);
      }
    } else {
      atomicAdd(p + i, v[i]);
    }
  }
}
#endif
#undef TT_RED16
)TTHDR"
         R"TTHDR(
// Triton's atomics are acq_rel at GPU scope: a relaxed atomic between two of these fences
// (fence.acq_rel, lighter than __threadfence's fence.sc).
TT_INLINE void tt_fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// ---- pointer arithmetic ----
// p + off for a 32-bit offset, as Triton's getelementptr lowers: one mul.wide by the element size
// and a 64-bit add, which ptxas fuses into one IMAD.WIDE. The C++ form p + (int64_t)off reaches
// ptxas as a sign extension, a shift and an add (SHF + LEA + LEA.HI.X). Where the generator uses
// it: Lowering::wide_address (lowering/values.cpp).
template <class T> TT_INLINE T* tt_addptr(T* p, int32_t off) {
  long long b;
  asm("mul.wide.s32 %0, %1, %2;" : "=l"(b) : "r"(off), "n"((int)sizeof(T)));
  return (T*)((char*)p + b);
}
template <class T> TT_INLINE T* tt_addptr(T* p, uint32_t off) {
  unsigned long long b;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(b) : "r"(off), "n"((int)sizeof(T)));
  return (T*)((char*)p + b);
}

// ---- vector copies (the 16-byte path of loads and stores) ----
template <int BYTES> TT_INLINE void tt_vcopy(void* dst, const void* src) {
  if (BYTES == 16) *(uint4*)dst = *(const uint4*)src;
  else if (BYTES == 8) *(uint2*)dst = *(const uint2*)src;
  else if (BYTES == 4) *(uint32_t*)dst = *(const uint32_t*)src;
  else if (BYTES == 2) *(uint16_t*)dst = *(const uint16_t*)src;
  else *(uint8_t*)dst = *(const uint8_t*)src;
}

// ---- tensor cores (sm_80+): shared-memory addresses, cp.async, ldmatrix, mma.sync ----
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
TT_INLINE uint32_t tt_smem_u32(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// BYTES (4, 8 or 16) global -> shared; bytes < BYTES zero-fills the rest.
template <int BYTES> TT_INLINE void tt_cp_async(uint32_t dst, const void* src, int bytes) {
  if (BYTES == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(BYTES), "r"(bytes) : "memory");
}
TT_INLINE void tt_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> TT_INLINE void tt_cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
TT_INLINE void tt_ldsm_x4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
TT_INLINE void tt_ldsm_x4_trans(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// c[0..3] += a (16 x 16, row) * b (16 x 8, col) for one warp, f32 accumulators.
#define TT_MMA_16816(NAME, T)                                                                             \
  TT_INLINE void NAME(float* c, const uint32_t* a, const uint32_t* b) {                                \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
                 "{%8, %9}, {%0, %1, %2, %3};"                                                          \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                       \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                  \
  }
TT_MMA_16816(tt_mma_f16, "f16")
TT_MMA_16816(tt_mma_bf16, "bf16")
#undef TT_MMA_16816
TT_INLINE uint32_t tt_ld_shared4(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
// fp32 bits -> tf32 bits, rounded to nearest (ties away), the low 13 bits zero.
TT_INLINE uint32_t tt_tf32(uint32_t x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}
// tf32x3: x = big + small, both tf32 (x becomes big).
TT_INLINE void tt_tf32_split(uint32_t& x, uint32_t& small) {
  uint32_t big = tt_tf32(x);
  small = tt_tf32(__float_as_uint(__uint_as_float(x) - __uint_as_float(big)));
  x = big;
}
// c[0..3] += a (16 x 8, row) * b (8 x 8, col), tf32 operands, f32 accumulators.
TT_INLINE void tt_mma_tf32(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// wgmma's shared-memory matrix descriptor: start address, leading and stride byte offsets (all in
// 16-byte units), swizzle mode (1: 128 B, 2: 64 B, 3: 32 B).
TT_INLINE uint64_t tt_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t mode) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)mode << 62);
}
// stmatrix (sm_90): X 8 x 8 matrices of 16-bit elements, matrix i from register i of every lane
// (lane l: row l / 4, elements 2 (l % 4) and + 1), row j of matrix i written as 16 bytes at the
// address lane 8 i + j gives (a layout conversion's 16-byte rows, convert.cpp).
TT_INLINE uint32_t tt_pack_b16(const void* pair) { return *(const uint32_t*)pair; }
TT_INLINE void tt_stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2),
               "r"(r3) : "memory");
}
TT_INLINE void tt_stmatrix_x2(uint32_t addr, uint32_t r0, uint32_t r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1) : "memory");
}
TT_INLINE void tt_stmatrix_x1(uint32_t addr, uint32_t r0) {
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(addr), "r"(r0) : "memory");
}
TT_INLINE void tt_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TT_INLINE void tt_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> TT_INLINE void tt_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// Shared memory written in the generic proxy (st.shared, and cp.async's copies once waited for)
// before wgmma reads it through the async proxy.
TT_INLINE void tt_fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Stages filled by the bulk tensor copy engine (TMA): one mbarrier per stage, armed by the issuing
// thread with the stage's byte count; the copies complete the transaction, waiters test the phase.
TT_INLINE void tt_mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
TT_INLINE void tt_fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
TT_INLINE void tt_mbarrier_inval(uint32_t bar) { asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory"); }
TT_INLINE void tt_mbarrier_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
TT_INLINE void tt_mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{ .reg .pred p; TT_WAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra TT_WAIT_%=; }"
               ::"r"(bar), "r"(parity) : "memory");
}
// Whether the launcher encoded a 2-D tensor map of 2-byte elements with this shape and row
// stride (tensor_map_usable in tma.cpp): dims in [1, 2^32], rows 16-byte aligned, < 2^40 bytes.
TT_INLINE bool tt_tensor_map_usable(int64_t shape0, int64_t shape1, int64_t stride0, int esize = 2) {
  return shape0 >= 1 && shape0 <= (1ll << 32) && shape1 >= 1 && shape1 <= (1ll << 32) && stride0 >= 1 &&
         stride0 < (1ll << 40) / esize && (stride0 * esize) % 16 == 0;
}
// A tensor map's 128 bytes into the TMA unit's cache before the first copy needs them.
TT_INLINE void tt_prefetch_tensormap(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}
// A box of a 2-D tensor map at (c0 along the contiguous dim, c1) into shared memory at dst;
// elements outside the tensor read as zero.
TT_INLINE void tt_tma_load_2d(uint32_t dst, const void* map, int c0, int c1, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
// The other way: a box of shared memory at src into the tensor at (c0, c1); elements outside the
// tensor are not written (the device side of tma.h's plan_tma_store, unused since the matmul-loop
// matcher went; kept with it for the layout generator's dot stores). The copies a thread issued form bulk groups (commit); wait_read<N> returns
// once all but N groups finished reading shared memory, wait_all once they are done.
TT_INLINE void tt_tma_store_2d(const void* map, int c0, int c1, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
TT_INLINE void tt_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
TT_INLINE void tt_bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
TT_INLINE void tt_bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
#endif

// ---- masked vector loads: one predicated load, straight-line code the scheduler can hoist ----
template <int BYTES> TT_INLINE void tt_ld_pred(void* dst, const void* src, bool p) {
  if (BYTES == 16) {
    uint4& v = *(uint4*)dst;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q ld.global.v4.u32 {%0, %1, %2, %3}, [%4]; }"
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w) : "l"(src), "r"((int)p) : "memory");
  } else if (BYTES == 8) {
    uint2& v = *(uint2*)dst;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q ld.global.v2.u32 {%0, %1}, [%2]; }"
                 : "+r"(v.x), "+r"(v.y) : "l"(src), "r"((int)p) : "memory");
  } else if (BYTES == 4) {
    uint32_t& v = *(uint32_t*)dst;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global.u32 %0, [%1]; }" : "+r"(v) : "l"(src), "r"((int)p) : "memory");
  } else {
    uint16_t& v = *(uint16_t*)dst;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global.u16 %0, [%1]; }" : "+h"(v) : "l"(src), "r"((int)p) : "memory");
  }
}

template <int BYTES> TT_INLINE void tt_st_pred(void* dst, const void* src, bool p) {
  if (BYTES == 16) {
    const uint4 v = *(const uint4*)src;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q st.global.v4.u32 [%0], {%1, %2, %3, %4}; }"
                 ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"((int)p) : "memory");
  } else if (BYTES == 8) {
    const uint2 v = *(const uint2*)src;
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q st.global.v2.u32 [%0], {%1, %2}; }"
                 ::"l"(dst), "r"(v.x), "r"(v.y), "r"((int)p) : "memory");
  } else if (BYTES == 4) {
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.u32 [%0], %1; }"
                 ::"l"(dst), "r"(*(const uint32_t*)src), "r"((int)p) : "memory");
  } else {
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.u16 [%0], %1; }"
                 ::"l"(dst), "h"(*(const uint16_t*)src), "r"((int)p) : "memory");
  }
}

// ---- cache-hinted global accesses (Triton's cache_modifier / eviction_policy, jit/cuda/cache_hints.h):
// tt_ld_pred_S / tt_st_pred_S as above with the PTX qualifier Q, and one element tt_ld_S(p) /
// tt_st_S(p, v). Only the instantiated ones reach ptxas. ----
#define TT_HINTED_ACCESS(S, Q) \
template <int BYTES> TT_INLINE void tt_ld_pred##S(void* dst, const void* src, bool p) { \
  if (BYTES == 16) { \
    uint4& v = *(uint4*)dst; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q ld.global" Q ".v4.u32 {%0, %1, %2, %3}, [%4]; }" \
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w) : "l"(src), "r"((int)p) : "memory"); \
  } else if (BYTES == 8) { \
    uint2& v = *(uint2*)dst; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q ld.global" Q ".v2.u32 {%0, %1}, [%2]; }" \
                 : "+r"(v.x), "+r"(v.y) : "l"(src), "r"((int)p) : "memory"); \
  } else if (BYTES == 4) { \
    uint32_t& v = *(uint32_t*)dst; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global" Q ".u32 %0, [%1]; }" : "+r"(v) : "l"(src), "r"((int)p) : "memory"); \
  } else if (BYTES == 2) { \
    uint16_t& v = *(uint16_t*)dst; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global" Q ".u16 %0, [%1]; }" : "+h"(v) : "l"(src), "r"((int)p) : "memory"); \
  } else { \
    uint16_t v = *(uint8_t*)dst; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global" Q ".u8 %0, [%1]; }" : "+h"(v) : "l"(src), "r"((int)p) : "memory"); \
    *(uint8_t*)dst = (uint8_t)v; \
  } \
} \
template <int BYTES> TT_INLINE void tt_st_pred##S(void* dst, const void* src, bool p) { \
  if (BYTES == 16) { \
    const uint4 v = *(const uint4*)src; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q st.global" Q ".v4.u32 [%0], {%1, %2, %3, %4}; }" \
                 ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"((int)p) : "memory"); \
  } else if (BYTES == 8) { \
    const uint2 v = *(const uint2*)src; \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q st.global" Q ".v2.u32 [%0], {%1, %2}; }" \
                 ::"l"(dst), "r"(v.x), "r"(v.y), "r"((int)p) : "memory"); \
  } else if (BYTES == 4) { \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global" Q ".u32 [%0], %1; }" \
                 ::"l"(dst), "r"(*(const uint32_t*)src), "r"((int)p) : "memory"); \
  } else if (BYTES == 2) { \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global" Q ".u16 [%0], %1; }" \
                 ::"l"(dst), "h"(*(const uint16_t*)src), "r"((int)p) : "memory"); \
  } else { \
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global" Q ".u8 [%0], %1; }" \
                 ::"l"(dst), "h"((uint16_t)*(const uint8_t*)src), "r"((int)p) : "memory"); \
  } \
} \
template <class T> TT_INLINE T tt_ld##S(const T* p) { \
  T v; \
  tt_ld_pred##S<sizeof(T)>(&v, p, true); \
  return v; \
} \
template <class T, class U> TT_INLINE void tt_st##S(T* p, U u) { \
  T v = (T)u; \
  tt_st_pred##S<sizeof(T)>(p, &v, true); \
}
TT_HINTED_ACCESS(_ca, ".ca")
TT_HINTED_ACCESS(_cg, ".cg")
TT_HINTED_ACCESS(_cv, ".cv")
TT_HINTED_ACCESS(_wb, ".wb")
TT_HINTED_ACCESS(_cs, ".cs")
TT_HINTED_ACCESS(_wt, ".wt")
TT_HINTED_ACCESS(_ef, ".L1::evict_first")
TT_HINTED_ACCESS(_el, ".L1::evict_last")
#undef TT_HINTED_ACCESS

// ---- f32 math as Triton's defaults: exp through ex2.approx, div.full, approximate sqrt/rsqrt ----
TT_INLINE float tt_exp(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}
// exp2 as Triton's tl.math.exp2 on f32: one MUFU.EX2 (ex2.approx.ftz), where CUDA's exp2f scales
// subnormal results around it (an FSETP, two FMULs and an FSEL more per element: a quarter of
// attention's inner loop). Results below 2^-126 flush to zero.
TT_INLINE float tt_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TT_INLINE float tt_fdiv(float a, float b) {
  float y;
  asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
// tl::fast_dividef's reciprocal (libdevice's fast_dividef, CUDA's __fdividef): one MUFU.RCP, 1 ulp;
// subnormal inputs and results flush to zero.
TT_INLINE float tt_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TT_INLINE float tt_sqrt(float x) {
  float y;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TT_INLINE float tt_rsqrt(float x) {
  float y;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// Triton's sigmoid is 1 / (1 + exp(-x)) in these defaults (ex2.approx, div.full); expf and the IEEE
// division took about twice the instructions of Liger's swiglu (docs/cuda-backend.md, 2026-11-26).
TT_INLINE float tt_sigmoid(float x) { return tt_fdiv(1.0f, 1.0f + tt_exp(-x)); }

// ---- device_assert and debug checks: the first failure records (check id + 1, program id, lane,
// payload) for the host: int [0] id + 1, [1..3] program, long long at byte 16: lane, payload[3] ----
TT_INLINE void tt_assert_fail(int* flag, int id, int px, int py, int pz, long long lane, long long p0, long long p1,
                              long long p2) {
  if (atomicCAS(flag, 0, id + 1) == 0) {
    flag[1] = px;
    flag[2] = py;
    flag[3] = pz;
    long long* w = (long long*)(flag + 4);
    w[0] = lane;
    w[1] = p0;
    w[2] = p1;
    w[3] = p2;
    __threadfence_system();
  }
}
// ---- end of the tritium device header ----
)TTHDR";
}

}  // namespace tritium::jit::cuda
