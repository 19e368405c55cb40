//! pgbench's hash and permutation functions, bit-identical to PostgreSQL 17's pgbench.
//!
//! Scripts that use `hash()`, `hash_fnv1a()`, `hash_murmur2()` or `permute()` must draw the
//! same keys as real pgbench does with the same seed, or a run here and a pgbench run of the
//! same script touch different rows. So each function reimplements the algorithm of its
//! pgbench counterpart (src/bin/pgbench/pgbench.c) in Rust, with no code text carried over:
//!
//! - [`hash_fnv1a`] follows `getHashFnv1a`: 64-bit FNV-1a over the 8 bytes of the value,
//!   least significant first, with the seed XORed into the offset basis.
//! - [`hash_murmur2`] follows `getHashMurmur2` (pgbench's `hash()`): MurmurHash64A of one
//!   8-byte key, with the seed XORed with `MUL * 8` (the key length) as MurmurHash64A does.
//! - [`permute`] follows `permute`: six rounds of (odd multiply, XOR, rotate) on overlapping
//!   lower and upper power-of-two halves plus a random offset, drawing from PostgreSQL's
//!   `pg_prng` (src/common/pg_prng.c: xoroshiro128** seeded by two splitmix64 steps), which
//!   `Prng` reproduces. PostgreSQL 15 moved `permute` onto `pg_prng`; 15 to 17 agree.
//!
//! pgbench's seeds are signed integers that it reinterprets as unsigned; these functions take
//! `i64` seeds and do the same. Its default seed (`:default_seed`, what one-argument `hash()`
//! uses) is random per run, so no default lives here: the caller passes the seed.
//!
//! The tests compare against values printed by pgbench 15 itself (see `tests` below).

/// FNV-1a 64-bit prime and offset basis.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// MurmurHash64A multiplier and shift.
const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_ROT: u32 = 47;

/// Error of `permute()` with a size below 1, worded as pgbench reports it.
pub const PERMUTE_SIZE_ERROR: &str = "permute size parameter must be greater than zero";

/// pgbench `hash_fnv1a(val, seed)`.
pub fn hash_fnv1a(val: i64, seed: i64) -> i64 {
    // pgbench hashes the low byte first, shifting 8 times: the little-endian bytes.
    val.to_le_bytes()
        .iter()
        .fold(FNV_OFFSET_BASIS ^ seed as u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
        }) as i64
}

/// pgbench `hash_murmur2(val, seed)`, which is also `hash(val, seed)`.
pub fn hash_murmur2(val: i64, seed: i64) -> i64 {
    let mut k = (val as u64).wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);

    // The key length (8 bytes) is folded into the seed, as in MurmurHash64A.
    let mut h = (seed as u64) ^ MM2_MUL.wrapping_mul(8);
    h ^= k;
    h = h.wrapping_mul(MM2_MUL);

    // Final avalanche.
    h ^= h >> MM2_ROT;
    h = h.wrapping_mul(MM2_MUL);
    h ^= h >> MM2_ROT;
    h as i64
}

/// pgbench `permute(val, size, seed)`: the position of `val mod size` in a pseudorandom
/// permutation of `[0, size)` chosen by `seed`.
///
/// `val` is taken modulo `size` after reinterpretation as unsigned, as pgbench does, so a
/// negative `val` does not map to `val.rem_euclid(size)`.
pub fn permute(val: i64, size: i64, seed: i64) -> Result<i64, &'static str> {
    if size <= 0 {
        return Err(PERMUTE_SIZE_ERROR);
    }
    if size < 2 {
        return Ok(0); // a single element has one permutation
    }

    let mut rng = Prng::new(seed as u64);
    let size = size as u64;
    let mut v = (val as u64) % size;

    // Work modulo the largest power of 2 not above size (masklen >= 1 as size >= 2).
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;

    // Odd multiply (a bijection mod 2^masklen), XOR, then rotate the top bit down so the
    // low bits, which multiplication mixes poorly, also get shuffled.
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (masklen - 1))
    };

    for _ in 0..6 {
        // Lower half [0, mask]: the draws happen whether or not v is in it, to keep the
        // stream of random numbers identical to pgbench's.
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }

        // Upper half [size - 1 - mask, size - 1], mirrored onto [0, mask].
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }

        // Random offset over the whole range; v + r < 2 * size <= 2^64 cannot overflow.
        let r = rng.below_or_eq(size - 1);
        v = (v + r) % size;
    }

    Ok(v as i64)
}

/// PostgreSQL's `pg_prng`: xoroshiro128** 1.0, seeded through splitmix64.
struct Prng {
    s0: u64,
    s1: u64,
}

impl Prng {
    /// `pg_prng_seed`: two splitmix64 outputs form the state.
    fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut splitmix64 = || {
            sm = sm.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let s0 = splitmix64();
        let s1 = splitmix64();
        if s0 == 0 && s1 == 0 {
            // All zeroes is a fixed point of xoroshiro; pg_prng substitutes Knuth's LCG
            // constants.
            Prng {
                s0: 0x5851_f42d_4c95_7f2d,
                s1: 0x1405_7b7e_f767_814f,
            }
        } else {
            Prng { s0, s1 }
        }
    }

    /// `pg_prng_uint64`: one xoroshiro128** step.
    fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let out = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        out
    }

    /// `pg_prng_uint64_range(0, max)`: uniform in `[0, max]` by bitmask rejection on the
    /// top bits, consuming as many draws as pg_prng does.
    fn below_or_eq(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let shift = max.leading_zeros();
        loop {
            let x = self.next_u64() >> shift;
            if x <= max {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values printed by the real pgbench 15.18 (Debian 12, /usr/bin/pgbench) with
    // a throwaway server, from a script of one `\set vN debug(<call>)` line per case plus
    // `SELECT 1;`:
    //   pgbench -h /tmp -p 55999 -U postgres -n -t 1 -f ref.sql postgres
    // and parsing its `debug(script=0,command=N): int X` lines from stderr. `i64::MIN` was
    // written as -9223372036854775808 in the script.

    /// (val, seed, hash_fnv1a(val, seed))
    const FNV1A: &[(i64, i64, i64)] = &[
        (0, 0, -6284781860667377211),
        (0, 1, -8517097267634966620),
        (0, -1, 4052466453699787802),
        (0, 5432, 5600063106439994301),
        (0, i64::MIN, 2938590176187398597),
        (0, i64::MAX, -5170905583154988006),
        (1, 0, -8517097267634966620),
        (1, 1, -6284781860667377211),
        (1, -1, 6284781860667377211),
        (1, 5432, 3367747699472404892),
        (1, i64::MIN, 706274769219809188),
        (1, i64::MAX, -2938590176187398597),
        (-1, 0, -8289690350564177859),
        (-1, 1, -280853605209635300),
        (-1, -1, 9116541788052886162),
        (-1, 5432, 3795662180246657077),
        (-1, i64::MIN, 933681686290597949),
        (-1, i64::MAX, -106830248801889646),
        (42, 0, -55488592825689361),
        (42, 1, -2287803999793278770),
        (42, -1, -2176826814141900048),
        (42, 5432, 8300031466468664087),
        (42, i64::MIN, 9167883444029086447),
        (42, i64::MAX, 7046545222712875760),
        (123456789, 0, -2350796791908741607),
        (123456789, 1, -2673429571296378580),
        (123456789, -1, 6091392141410076514),
        (123456789, 5432, 4266817465876938289),
        (123456789, i64::MIN, 6872575244946034201),
        (123456789, i64::MAX, -3131979895444699294),
        (-9876543210, 0, -5469106564180668060),
        (-9876543210, 1, 970275168779059001),
        (-9876543210, -1, 6899156487966011279),
        (-9876543210, 5432, 8757354954747883836),
        (-9876543210, i64::MIN, 3754265472674107748),
        (-9876543210, i64::MAX, -2324215548888764529),
        (i64::MAX, 0, -8289549613075766851),
        (i64::MAX, 1, -280712867721224292),
        (i64::MAX, -1, 9116682525541297170),
        (i64::MAX, 5432, 3795802917735068085),
        (i64::MAX, i64::MIN, 933822423779008957),
        (i64::MAX, i64::MAX, -106689511313478638),
        (i64::MIN, 0, -6284922598155788219),
        (i64::MIN, 1, -8517238005123377628),
        (i64::MIN, -1, 4052607191188198810),
        (i64::MIN, 5432, 5599922368951583293),
        (i64::MIN, i64::MIN, 2938449438698987589),
        (i64::MIN, i64::MAX, -5170764845666576998),
    ];

    /// (val, seed, hash_murmur2(val, seed))
    const MURMUR2: &[(i64, i64, i64)] = &[
        (0, 0, 8217090173679840641),
        (0, 1, 6469830575553437113),
        (0, -1, -1429387546045227835),
        (0, 5432, 6045885599107954120),
        (0, i64::MIN, 5365366227499048315),
        (0, i64::MAX, 1422336400135529452),
        (1, 0, -8089716718896805586),
        (1, 1, 5833352340892006082),
        (1, -1, 8383142988610529298),
        (1, 5432, 8409120883607651217),
        (1, i64::MIN, 7505303408632055305),
        (1, i64::MAX, 5531419042429704504),
        (-1, 0, 4219408603045787357),
        (-1, 1, 1123455060992376216),
        (-1, -1, 1317380444104773032),
        (-1, 5432, 3202824124722859978),
        (-1, i64::MIN, 7071132549226612610),
        (-1, i64::MAX, -1534343502075937711),
        (42, 0, -3251795447530343920),
        (42, 1, 8550017599394621797),
        (42, -1, 5248481571682728979),
        (42, 5432, -8888550574847118926),
        (42, i64::MIN, -400071501349395637),
        (42, i64::MAX, 2396757625501970234),
        (123456789, 0, -1652411274631746233),
        (123456789, 1, -6364088304119011446),
        (123456789, -1, -8406561874705926337),
        (123456789, 5432, -6977665671479594339),
        (123456789, i64::MIN, -4504135220812694119),
        (123456789, i64::MAX, -5554837928525249466),
        (-9876543210, 0, 8975884439908834513),
        (-9876543210, 1, -2080052460326037008),
        (-9876543210, -1, -3715485936877997955),
        (-9876543210, 5432, 3089064134379481588),
        (-9876543210, i64::MIN, -6619135687620006472),
        (-9876543210, i64::MAX, -6567209883058921189),
        (i64::MAX, 0, -6118008551640328833),
        (i64::MAX, 1, -422191570849047500),
        (i64::MAX, -1, -7449049946749928351),
        (i64::MAX, 5432, -4755676558467274251),
        (i64::MAX, i64::MIN, -8969732497821252539),
        (i64::MAX, i64::MAX, 8145970180778700614),
        (i64::MIN, 0, 9158703207903963431),
        (i64::MIN, 1, 13853359902897483),
        (i64::MIN, -1, 5949093009533562506),
        (i64::MIN, 5432, -2711967873914999986),
        (i64::MIN, i64::MIN, -6436316919624885688),
        (i64::MIN, i64::MAX, 8800816955714355153),
    ];

    /// (val, size, seed, permute(val, size, seed))
    const PERMUTE: &[(i64, i64, i64, i64)] = &[
        (0, 1, 0, 0),
        (1, 1, 0, 0),
        (5, 1, 0, 0),
        (-1, 1, 0, 0),
        (-7, 1, 0, 0),
        (99, 1, 0, 0),
        (100, 1, 0, 0),
        (12345, 1, 0, 0),
        (i64::MAX, 1, 0, 0),
        (i64::MIN, 1, 0, 0),
        (0, 2, 0, 0),
        (1, 2, 0, 1),
        (5, 2, 0, 1),
        (-1, 2, 0, 1),
        (-7, 2, 0, 1),
        (99, 2, 0, 1),
        (100, 2, 0, 0),
        (12345, 2, 0, 1),
        (i64::MAX, 2, 0, 1),
        (i64::MIN, 2, 0, 0),
        (0, 3, 0, 2),
        (1, 3, 0, 1),
        (5, 3, 0, 0),
        (-1, 3, 0, 2),
        (-7, 3, 0, 2),
        (99, 3, 0, 2),
        (100, 3, 0, 1),
        (12345, 3, 0, 2),
        (i64::MAX, 3, 0, 1),
        (i64::MIN, 3, 0, 0),
        (0, 5, 0, 2),
        (1, 5, 0, 4),
        (5, 5, 0, 2),
        (-1, 5, 0, 2),
        (-7, 5, 0, 3),
        (99, 5, 0, 3),
        (100, 5, 0, 2),
        (12345, 5, 0, 2),
        (i64::MAX, 5, 0, 0),
        (i64::MIN, 5, 0, 1),
        (0, 10, 0, 0),
        (1, 10, 0, 7),
        (5, 10, 0, 8),
        (-1, 10, 0, 8),
        (-7, 10, 0, 5),
        (99, 10, 0, 5),
        (100, 10, 0, 0),
        (12345, 10, 0, 8),
        (i64::MAX, 10, 0, 4),
        (i64::MIN, 10, 0, 9),
        (0, 1000, 0, 868),
        (1, 1000, 0, 977),
        (5, 1000, 0, 333),
        (-1, 1000, 0, 646),
        (-7, 1000, 0, 638),
        (99, 1000, 0, 134),
        (100, 1000, 0, 359),
        (12345, 1000, 0, 926),
        (i64::MAX, 1000, 0, 222),
        (i64::MIN, 1000, 0, 373),
        (0, 4294967296, 0, 3430425288),
        (1, 4294967296, 0, 3882540235),
        (5, 4294967296, 0, 3127131984),
        (-1, 4294967296, 0, 2451656013),
        (-7, 4294967296, 0, 2840532849),
        (99, 4294967296, 0, 3038250926),
        (100, 4294967296, 0, 2165314996),
        (12345, 4294967296, 0, 1553935867),
        (i64::MAX, 4294967296, 0, 2451656013),
        (i64::MIN, 4294967296, 0, 3430425288),
        (0, 1099511627783, 0, 889977941989),
        (1, 1099511627783, 0, 219083009868),
        (5, 1099511627783, 0, 782826473006),
        (-1, 1099511627783, 0, 141196067107),
        (-7, 1099511627783, 0, 383538494497),
        (99, 1099511627783, 0, 491378001081),
        (100, 1099511627783, 0, 825385152705),
        (12345, 1099511627783, 0, 14872847967),
        (i64::MAX, 1099511627783, 0, 272357138087),
        (i64::MIN, 1099511627783, 0, 1039005658683),
        (0, i64::MAX, 0, 6827909720952040287),
        (1, i64::MAX, 0, 1409427443184838618),
        (5, i64::MAX, 0, 5753364573780898029),
        (-1, i64::MAX, 0, 1409427443184838618),
        (-7, i64::MAX, 0, 3539944315522887365),
        (99, i64::MAX, 0, 8872918745355873136),
        (100, i64::MAX, 0, 902112495428112580),
        (12345, i64::MAX, 0, 5202315361611655269),
        (i64::MAX, i64::MAX, 0, 6827909720952040287),
        (i64::MIN, i64::MAX, 0, 1409427443184838618),
        (0, 1, 12345, 0),
        (1, 1, 12345, 0),
        (5, 1, 12345, 0),
        (-1, 1, 12345, 0),
        (-7, 1, 12345, 0),
        (99, 1, 12345, 0),
        (100, 1, 12345, 0),
        (12345, 1, 12345, 0),
        (i64::MAX, 1, 12345, 0),
        (i64::MIN, 1, 12345, 0),
        (0, 2, 12345, 0),
        (1, 2, 12345, 1),
        (5, 2, 12345, 1),
        (-1, 2, 12345, 1),
        (-7, 2, 12345, 1),
        (99, 2, 12345, 1),
        (100, 2, 12345, 0),
        (12345, 2, 12345, 1),
        (i64::MAX, 2, 12345, 1),
        (i64::MIN, 2, 12345, 0),
        (0, 3, 12345, 0),
        (1, 3, 12345, 2),
        (5, 3, 12345, 1),
        (-1, 3, 12345, 0),
        (-7, 3, 12345, 0),
        (99, 3, 12345, 0),
        (100, 3, 12345, 2),
        (12345, 3, 12345, 0),
        (i64::MAX, 3, 12345, 2),
        (i64::MIN, 3, 12345, 1),
        (0, 5, 12345, 0),
        (1, 5, 12345, 1),
        (5, 5, 12345, 0),
        (-1, 5, 12345, 0),
        (-7, 5, 12345, 2),
        (99, 5, 12345, 2),
        (100, 5, 12345, 0),
        (12345, 5, 12345, 0),
        (i64::MAX, 5, 12345, 3),
        (i64::MIN, 5, 12345, 4),
        (0, 10, 12345, 0),
        (1, 10, 12345, 3),
        (5, 10, 12345, 1),
        (-1, 10, 12345, 1),
        (-7, 10, 12345, 4),
        (99, 10, 12345, 4),
        (100, 10, 12345, 0),
        (12345, 10, 12345, 1),
        (i64::MAX, 10, 12345, 5),
        (i64::MIN, 10, 12345, 2),
        (0, 1000, 12345, 837),
        (1, 1000, 12345, 895),
        (5, 1000, 12345, 452),
        (-1, 1000, 12345, 127),
        (-7, 1000, 12345, 983),
        (99, 1000, 12345, 539),
        (100, 1000, 12345, 425),
        (12345, 1000, 12345, 681),
        (i64::MAX, 1000, 12345, 590),
        (i64::MIN, 1000, 12345, 874),
        (0, 4294967296, 12345, 381749760),
        (1, 4294967296, 12345, 665480070),
        (5, 4294967296, 12345, 3110839375),
        (-1, 4294967296, 12345, 3158817222),
        (-7, 4294967296, 12345, 3516668406),
        (99, 4294967296, 12345, 3840514928),
        (100, 4294967296, 12345, 1162927757),
        (12345, 4294967296, 12345, 2366907254),
        (i64::MAX, 4294967296, 12345, 3158817222),
        (i64::MIN, 4294967296, 12345, 381749760),
        (0, 1099511627783, 12345, 497089304753),
        (1, 1099511627783, 12345, 562859561369),
        (5, 1099511627783, 12345, 106723569014),
        (-1, 1099511627783, 12345, 489011915100),
        (-7, 1099511627783, 12345, 901696073141),
        (99, 1099511627783, 12345, 548174447735),
        (100, 1099511627783, 12345, 414531177308),
        (12345, 1099511627783, 12345, 738582049367),
        (i64::MAX, 1099511627783, 12345, 780964083052),
        (i64::MIN, 1099511627783, 12345, 726362004505),
        (0, i64::MAX, 12345, 4718708356201176947),
        (1, i64::MAX, 12345, 2510495696652690909),
        (5, i64::MAX, 12345, 1239419412536100576),
        (-1, i64::MAX, 12345, 2510495696652690909),
        (-7, i64::MAX, 12345, 8506584292671668501),
        (99, i64::MAX, 12345, 2543738116696055488),
        (100, i64::MAX, 12345, 1697545606277592905),
        (12345, i64::MAX, 12345, 4584369424184107448),
        (i64::MAX, i64::MAX, 12345, 4718708356201176947),
        (i64::MIN, i64::MAX, 12345, 2510495696652690909),
        (0, 1, -1, 0),
        (1, 1, -1, 0),
        (5, 1, -1, 0),
        (-1, 1, -1, 0),
        (-7, 1, -1, 0),
        (99, 1, -1, 0),
        (100, 1, -1, 0),
        (12345, 1, -1, 0),
        (i64::MAX, 1, -1, 0),
        (i64::MIN, 1, -1, 0),
        (0, 2, -1, 0),
        (1, 2, -1, 1),
        (5, 2, -1, 1),
        (-1, 2, -1, 1),
        (-7, 2, -1, 1),
        (99, 2, -1, 1),
        (100, 2, -1, 0),
        (12345, 2, -1, 1),
        (i64::MAX, 2, -1, 1),
        (i64::MIN, 2, -1, 0),
        (0, 3, -1, 2),
        (1, 3, -1, 0),
        (5, 3, -1, 1),
        (-1, 3, -1, 2),
        (-7, 3, -1, 2),
        (99, 3, -1, 2),
        (100, 3, -1, 0),
        (12345, 3, -1, 2),
        (i64::MAX, 3, -1, 0),
        (i64::MIN, 3, -1, 1),
        (0, 5, -1, 3),
        (1, 5, -1, 1),
        (5, 5, -1, 3),
        (-1, 5, -1, 3),
        (-7, 5, -1, 4),
        (99, 5, -1, 4),
        (100, 5, -1, 3),
        (12345, 5, -1, 3),
        (i64::MAX, 5, -1, 0),
        (i64::MIN, 5, -1, 2),
        (0, 10, -1, 8),
        (1, 10, -1, 7),
        (5, 10, -1, 1),
        (-1, 10, -1, 1),
        (-7, 10, -1, 5),
        (99, 10, -1, 5),
        (100, 10, -1, 8),
        (12345, 10, -1, 1),
        (i64::MAX, 10, -1, 6),
        (i64::MIN, 10, -1, 2),
        (0, 1000, -1, 147),
        (1, 1000, -1, 696),
        (5, 1000, -1, 25),
        (-1, 1000, -1, 438),
        (-7, 1000, -1, 312),
        (99, 1000, -1, 849),
        (100, 1000, -1, 992),
        (12345, 1000, -1, 215),
        (i64::MAX, 1000, -1, 921),
        (i64::MIN, 1000, -1, 832),
        (0, 4294967296, -1, 983120764),
        (1, 4294967296, -1, 3101423605),
        (5, 4294967296, -1, 3845125575),
        (-1, 4294967296, -1, 1350241209),
        (-7, 4294967296, -1, 726535233),
        (99, 4294967296, -1, 947567002),
        (100, 4294967296, -1, 996139713),
        (12345, 4294967296, -1, 3852342586),
        (i64::MAX, 4294967296, -1, 1350241209),
        (i64::MIN, 4294967296, -1, 983120764),
        (0, 1099511627783, -1, 964313844917),
        (1, 1099511627783, -1, 326058886254),
        (5, 1099511627783, -1, 425407907932),
        (-1, 1099511627783, -1, 29646877083),
        (-7, 1099511627783, -1, 1044856753744),
        (99, 1099511627783, -1, 513361609267),
        (100, 1099511627783, -1, 953623564154),
        (12345, 1099511627783, -1, 121808709292),
        (i64::MAX, 1099511627783, -1, 540600810159),
        (i64::MIN, 1099511627783, -1, 106967709178),
        (0, i64::MAX, -1, 5807662871815975849),
        (1, i64::MAX, -1, 253286445164279399),
        (5, i64::MAX, -1, 5317344602584391875),
        (-1, i64::MAX, -1, 253286445164279399),
        (-7, i64::MAX, -1, 2841629823908002419),
        (99, i64::MAX, -1, 4201960731594570020),
        (100, i64::MAX, -1, 3149545928607631584),
        (12345, i64::MAX, -1, 2091259528241091577),
        (i64::MAX, i64::MAX, -1, 5807662871815975849),
        (i64::MIN, i64::MAX, -1, 253286445164279399),
        (0, 1, i64::MIN, 0),
        (1, 1, i64::MIN, 0),
        (5, 1, i64::MIN, 0),
        (-1, 1, i64::MIN, 0),
        (-7, 1, i64::MIN, 0),
        (99, 1, i64::MIN, 0),
        (100, 1, i64::MIN, 0),
        (12345, 1, i64::MIN, 0),
        (i64::MAX, 1, i64::MIN, 0),
        (i64::MIN, 1, i64::MIN, 0),
        (0, 2, i64::MIN, 0),
        (1, 2, i64::MIN, 1),
        (5, 2, i64::MIN, 1),
        (-1, 2, i64::MIN, 1),
        (-7, 2, i64::MIN, 1),
        (99, 2, i64::MIN, 1),
        (100, 2, i64::MIN, 0),
        (12345, 2, i64::MIN, 1),
        (i64::MAX, 2, i64::MIN, 1),
        (i64::MIN, 2, i64::MIN, 0),
        (0, 3, i64::MIN, 2),
        (1, 3, i64::MIN, 0),
        (5, 3, i64::MIN, 1),
        (-1, 3, i64::MIN, 2),
        (-7, 3, i64::MIN, 2),
        (99, 3, i64::MIN, 2),
        (100, 3, i64::MIN, 0),
        (12345, 3, i64::MIN, 2),
        (i64::MAX, 3, i64::MIN, 0),
        (i64::MIN, 3, i64::MIN, 1),
        (0, 5, i64::MIN, 0),
        (1, 5, i64::MIN, 1),
        (5, 5, i64::MIN, 0),
        (-1, 5, i64::MIN, 0),
        (-7, 5, i64::MIN, 3),
        (99, 5, i64::MIN, 3),
        (100, 5, i64::MIN, 0),
        (12345, 5, i64::MIN, 0),
        (i64::MAX, 5, i64::MIN, 2),
        (i64::MIN, 5, i64::MIN, 4),
        (0, 10, i64::MIN, 8),
        (1, 10, i64::MIN, 1),
        (5, 10, i64::MIN, 0),
        (-1, 10, i64::MIN, 0),
        (-7, 10, i64::MIN, 2),
        (99, 10, i64::MIN, 2),
        (100, 10, i64::MIN, 8),
        (12345, 10, i64::MIN, 0),
        (i64::MAX, 10, i64::MIN, 3),
        (i64::MIN, 10, i64::MIN, 9),
        (0, 1000, i64::MIN, 233),
        (1, 1000, i64::MIN, 176),
        (5, 1000, i64::MIN, 238),
        (-1, 1000, i64::MIN, 602),
        (-7, 1000, i64::MIN, 639),
        (99, 1000, i64::MIN, 744),
        (100, 1000, i64::MIN, 355),
        (12345, 1000, i64::MIN, 48),
        (i64::MAX, 1000, i64::MIN, 412),
        (i64::MIN, 1000, i64::MIN, 625),
        (0, 4294967296, i64::MIN, 3256067431),
        (1, 4294967296, i64::MIN, 2752184123),
        (5, 4294967296, i64::MIN, 3650347852),
        (-1, 4294967296, i64::MIN, 4169579344),
        (-7, 4294967296, i64::MIN, 3184842517),
        (99, 4294967296, i64::MIN, 631248480),
        (100, 4294967296, i64::MIN, 3288520192),
        (12345, 4294967296, i64::MIN, 3926566347),
        (i64::MAX, 4294967296, i64::MIN, 4169579344),
        (i64::MIN, 4294967296, i64::MIN, 3256067431),
        (0, 1099511627783, i64::MIN, 375304807164),
        (1, 1099511627783, i64::MIN, 710714273066),
        (5, 1099511627783, i64::MIN, 298941575496),
        (-1, 1099511627783, i64::MIN, 986099742254),
        (-7, 1099511627783, i64::MIN, 603647213530),
        (99, 1099511627783, i64::MIN, 972413097961),
        (100, 1099511627783, i64::MIN, 1038606175396),
        (12345, 1099511627783, i64::MIN, 327438195912),
        (i64::MAX, 1099511627783, i64::MIN, 951610188969),
        (i64::MIN, 1099511627783, i64::MIN, 487415927075),
        (0, i64::MAX, i64::MIN, 9061925603549356191),
        (1, i64::MAX, i64::MIN, 2787068492670133621),
        (5, i64::MAX, i64::MIN, 1579243911055967468),
        (-1, i64::MAX, i64::MIN, 2787068492670133621),
        (-7, i64::MAX, i64::MIN, 8384571334393315480),
        (99, i64::MAX, i64::MIN, 8301981520538540224),
        (100, i64::MAX, i64::MIN, 3393604767897150212),
        (12345, i64::MAX, i64::MIN, 739069379090176694),
        (i64::MAX, i64::MAX, i64::MIN, 9061925603549356191),
        (i64::MIN, i64::MAX, i64::MIN, 2787068492670133621),
        (0, 7, 2024, 4),
        (1, 7, 2024, 3),
        (2, 7, 2024, 5),
        (3, 7, 2024, 2),
        (4, 7, 2024, 0),
        (5, 7, 2024, 6),
        (6, 7, 2024, 1),
    ];

    #[test]
    fn fnv1a_matches_pgbench() {
        for &(val, seed, want) in FNV1A {
            assert_eq!(hash_fnv1a(val, seed), want, "hash_fnv1a({val}, {seed})");
        }
    }

    #[test]
    fn murmur2_matches_pgbench() {
        for &(val, seed, want) in MURMUR2 {
            assert_eq!(hash_murmur2(val, seed), want, "hash_murmur2({val}, {seed})");
        }
    }

    #[test]
    fn permute_matches_pgbench() {
        for &(val, size, seed, want) in PERMUTE {
            assert_eq!(
                permute(val, size, seed),
                Ok(want),
                "permute({val}, {size}, {seed})"
            );
        }
    }

    #[test]
    fn permute_rejects_non_positive_size() {
        // pgbench: "permute size parameter must be greater than zero" for 0 and -5.
        assert_eq!(permute(3, 0, 1), Err(PERMUTE_SIZE_ERROR));
        assert_eq!(permute(3, -5, 1), Err(PERMUTE_SIZE_ERROR));
        assert_eq!(permute(0, i64::MIN, 1), Err(PERMUTE_SIZE_ERROR));
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in [1i64, 2, 3, 4, 5, 7, 8, 9, 31, 100, 257, 1000] {
            for seed in [0i64, 1, -1, 42, i64::MIN, i64::MAX] {
                let mut seen = vec![false; size as usize];
                for val in 0..size {
                    let p = permute(val, size, seed).unwrap();
                    assert!(
                        (0..size).contains(&p),
                        "permute({val}, {size}, {seed}) = {p}"
                    );
                    assert!(!seen[p as usize], "permute(_, {size}, {seed}) repeats {p}");
                    seen[p as usize] = true;
                }
            }
        }
    }
}
