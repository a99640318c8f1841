//! Type constructors: check the arguments as MPICH does, compute the new type's data from
//! its children, record the arguments for MPI_Type_get_contents, and register a handle.
//!
//! Counts arrive as `i64` whatever the C type was; `large` says the `_c` form was called, in
//! which case MPI-4 puts counts and displacements among the large counts of the contents.

use super::*;
use std::collections::HashMap;

/// Collects a constructor's arguments into `Contents`.
struct Args {
    large_form: bool,
    c: Contents,
}

impl Args {
    fn new(combiner: i32, large_form: bool) -> Args {
        Args { large_form, c: Contents { combiner, ints: vec![], aints: vec![], large: vec![], types: vec![] } }
    }
    /// A count or an element displacement: an int, or a large count in the `_c` form.
    fn count(&mut self, v: i64) -> &mut Self {
        if self.large_form {
            self.c.large.push(v)
        } else {
            self.c.ints.push(v as i32)
        }
        self
    }
    fn counts(&mut self, vs: &[i64]) -> &mut Self {
        for &v in vs {
            self.count(v);
        }
        self
    }
    /// A byte displacement: an address-sized integer, or a large count in the `_c` form.
    fn aints(&mut self, vs: &[i64]) -> &mut Self {
        for &v in vs {
            if self.large_form { self.c.large.push(v) } else { self.c.aints.push(v as isize) }
        }
        self
    }
    /// A plain int argument (ndims, order, distributions...).
    fn ints(&mut self, vs: &[i64]) -> &mut Self {
        self.c.ints.extend(vs.iter().map(|&v| v as i32));
        self
    }
    fn ty(&mut self, t: &Type) -> &mut Self {
        self.c.types.push(t.as_child());
        self
    }
}

fn new_type(data: TypeData, args: &Args) -> MpiResult<MPI_Datatype> {
    register(TypeObj {
        data,
        contents: args.c.clone(),
        name: Mutex::new(String::new()),
        committed: AtomicBool::new(false),
        permanent: false,
        handle: AtomicI32::new(MPI_DATATYPE_NULL),
    })
}

fn check_count(v: i64, what: &str) -> MpiResult<usize> {
    if v < 0 {
        err(MPI_ERR_COUNT, format!("invalid {what} argument ({what}={v}), must be non-negative"))
    } else {
        Ok(v as usize)
    }
}

fn input(dt: MPI_Datatype) -> MpiResult<Type> {
    lookup(dt)
}

/// A type made of `bl` consecutive copies of `old` (a vector's block).
fn block(old: &TypeData, bl: usize) -> TypeData {
    let mut c = Compose::default();
    c.place(old, 0, bl, old.extent());
    c.finish(false)
}

pub fn contiguous(count: i64, old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let n = check_count(count, "count")?;
    let t = input(old)?;
    let d = t.data();
    let data = block(&d, n);
    new_type(data, Args::new(MPI_COMBINER_CONTIGUOUS, large).count(count).ty(&t))
}

fn strided(count: usize, bl: usize, stride: isize, old: &TypeData) -> TypeData {
    let b = block(old, bl);
    let mut c = Compose::default();
    c.place(&b, 0, count, stride);
    c.finish(false)
}

pub fn vector(count: i64, bl: i64, stride: i64, old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let (n, b) = (check_count(count, "count")?, check_count(bl, "blocklength")?);
    let t = input(old)?;
    let d = t.data();
    let data = strided(n, b, stride as isize * d.extent(), &d);
    new_type(data, Args::new(MPI_COMBINER_VECTOR, large).counts(&[count, bl, stride]).ty(&t))
}

pub fn hvector(count: i64, bl: i64, stride: i64, old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let (n, b) = (check_count(count, "count")?, check_count(bl, "blocklength")?);
    let t = input(old)?;
    let data = strided(n, b, stride as isize, &t.data());
    new_type(data, Args::new(MPI_COMBINER_HVECTOR, large).counts(&[count, bl]).aints(&[stride]).ty(&t))
}

/// Blocks of `old` at byte displacements.
fn blocks_at(old: &TypeData, bls: &[usize], disps: &[isize]) -> TypeData {
    let mut c = Compose::default();
    for (&bl, &d) in bls.iter().zip(disps) {
        c.place(old, d, bl, old.extent());
    }
    c.finish(false)
}

fn check_counts(bls: &[i64]) -> MpiResult<Vec<usize>> {
    bls.iter().map(|&b| check_count(b, "blocklength")).collect()
}

pub fn indexed(bls: &[i64], disps: &[i64], old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let b = check_counts(bls)?;
    let t = input(old)?;
    let d = t.data();
    let ext = d.extent();
    let bytes: Vec<isize> = disps.iter().map(|&x| x as isize * ext).collect();
    let data = blocks_at(&d, &b, &bytes);
    let mut a = Args::new(MPI_COMBINER_INDEXED, large);
    a.count(bls.len() as i64).counts(bls).counts(disps).ty(&t);
    new_type(data, &a)
}

pub fn hindexed(bls: &[i64], disps: &[i64], old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let b = check_counts(bls)?;
    let t = input(old)?;
    let bytes: Vec<isize> = disps.iter().map(|&x| x as isize).collect();
    let data = blocks_at(&t.data(), &b, &bytes);
    let mut a = Args::new(MPI_COMBINER_HINDEXED, large);
    a.count(bls.len() as i64).counts(bls).aints(disps).ty(&t);
    new_type(data, &a)
}

pub fn indexed_block(bl: i64, disps: &[i64], old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let b = check_count(bl, "blocklength")?;
    let t = input(old)?;
    let d = t.data();
    let ext = d.extent();
    let bytes: Vec<isize> = disps.iter().map(|&x| x as isize * ext).collect();
    let data = blocks_at(&d, &vec![b; disps.len()], &bytes);
    let mut a = Args::new(MPI_COMBINER_INDEXED_BLOCK, large);
    a.count(disps.len() as i64).count(bl).counts(disps).ty(&t);
    new_type(data, &a)
}

pub fn hindexed_block(bl: i64, disps: &[i64], old: MPI_Datatype, large: bool) -> MpiResult<MPI_Datatype> {
    let b = check_count(bl, "blocklength")?;
    let t = input(old)?;
    let bytes: Vec<isize> = disps.iter().map(|&x| x as isize).collect();
    let data = blocks_at(&t.data(), &vec![b; disps.len()], &bytes);
    let mut a = Args::new(MPI_COMBINER_HINDEXED_BLOCK, large);
    a.count(disps.len() as i64).count(bl).aints(disps).ty(&t);
    new_type(data, &a)
}

pub fn create_struct(bls: &[i64], disps: &[i64], types: &[MPI_Datatype], large: bool) -> MpiResult<MPI_Datatype> {
    let b = check_counts(bls)?;
    let ts = types.iter().map(|&t| input(t)).collect::<MpiResult<Vec<_>>>()?;
    let mut c = Compose::default();
    for ((t, &bl), &d) in ts.iter().zip(&b).zip(disps) {
        let td = t.data();
        c.place(&td, d as isize, bl, td.extent());
    }
    let data = c.finish(true);
    let mut a = Args::new(MPI_COMBINER_STRUCT, large);
    a.count(bls.len() as i64).counts(bls).aints(disps);
    for t in &ts {
        a.ty(t);
    }
    new_type(data, &a)
}

pub fn resized(old: MPI_Datatype, lb: i64, extent: i64, large: bool) -> MpiResult<MPI_Datatype> {
    let t = input(old)?;
    let mut data = t.data().into_owned();
    data.lb = lb as isize;
    data.ub = (lb + extent) as isize;
    data.lb_marker = true;
    data.ub_marker = true;
    new_type(data, Args::new(MPI_COMBINER_RESIZED, large).aints(&[lb, extent]).ty(&t))
}

pub fn dup(old: MPI_Datatype) -> MpiResult<MPI_Datatype> {
    let t = input(old)?;
    let committed = match &t {
        Type::Derived(o) => o.is_committed(),
        _ => true,
    };
    let h = new_type(t.data().into_owned(), Args::new(MPI_COMBINER_DUP, false).ty(&t))?;
    if committed {
        commit(h)?;
    }
    Ok(h)
}

/// The elements of one dimension a process holds, as (first index, length) runs.
type Runs = Vec<(usize, usize)>;

/// An n-dimensional selection of `old`: `dims[i] = (global size, runs)`, fastest-varying
/// dimension first; the result spans the whole array (lb 0, extent = all elements).
fn grid(old: &TypeData, dims: &[(usize, Runs)]) -> TypeData {
    let mut cur = old.clone();
    let mut stride = old.extent();
    for (gsize, runs) in dims {
        let mut c = Compose::default();
        for &(start, len) in runs {
            c.place(&cur, start as isize * stride, len, stride);
        }
        cur = c.finish(false);
        stride *= *gsize as isize;
    }
    cur.lb = 0;
    cur.ub = stride;
    cur.lb_marker = true;
    cur.ub_marker = true;
    cur
}

fn order_dims<T>(mut v: Vec<T>, order: i32) -> MpiResult<Vec<T>> {
    match order {
        MPI_ORDER_FORTRAN => Ok(v),
        MPI_ORDER_C => {
            v.reverse();
            Ok(v)
        }
        _ => err(MPI_ERR_ARG, format!("invalid order argument ({order}): use MPI_ORDER_C or MPI_ORDER_FORTRAN")),
    }
}

pub fn subarray(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    order: i32,
    old: MPI_Datatype,
    large: bool,
) -> MpiResult<MPI_Datatype> {
    let nd = sizes.len();
    if nd == 0 {
        return err(MPI_ERR_ARG, "invalid ndims argument (0): must be positive");
    }
    for i in 0..nd {
        let (s, ss, st) = (sizes[i], subsizes[i], starts[i]);
        if s < 1 || ss < 0 || ss > s || st < 0 || st > s - ss {
            return err(MPI_ERR_ARG, format!("invalid subarray in dimension {i}: size {s}, subsize {ss}, start {st}"));
        }
    }
    let t = input(old)?;
    let dims: Vec<(usize, Runs)> =
        (0..nd).map(|i| (sizes[i] as usize, vec![(starts[i] as usize, subsizes[i] as usize)])).collect();
    let data = grid(&t.data(), &order_dims(dims, order)?);
    let mut a = Args::new(MPI_COMBINER_SUBARRAY, large);
    if large {
        a.ints(&[nd as i64, order as i64]);
        a.c.large.extend(sizes.iter().chain(subsizes).chain(starts));
    } else {
        a.ints(&[nd as i64]).ints(sizes).ints(subsizes).ints(starts).ints(&[order as i64]);
    }
    a.ty(&t);
    new_type(data, &a)
}

/// The runs of one dimension of a distributed array held by process coordinate `coord`.
fn darray_runs(gsize: usize, distrib: i32, darg: i32, psize: usize, coord: usize, dim: usize) -> MpiResult<Runs> {
    let bad = |what: String| err(MPI_ERR_ARG, format!("invalid darray dimension {dim}: {what}"));
    match distrib {
        MPI_DISTRIBUTE_NONE => {
            if psize != 1 {
                return bad(format!("MPI_DISTRIBUTE_NONE needs a process grid size of 1, not {psize}"));
            }
            Ok(vec![(0, gsize)])
        }
        MPI_DISTRIBUTE_BLOCK => {
            let blk = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                gsize.div_ceil(psize)
            } else if darg <= 0 || (darg as usize) * psize < gsize {
                return bad(format!("block size {darg} times {psize} processes does not cover {gsize} elements"));
            } else {
                darg as usize
            };
            let start = coord * blk;
            let len = gsize.saturating_sub(start).min(blk);
            Ok(if len > 0 { vec![(start, len)] } else { vec![] })
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let blk = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                1
            } else if darg <= 0 {
                return bad(format!("cyclic block size {darg} must be positive"));
            } else {
                darg as usize
            };
            let mut runs = vec![];
            let mut start = coord * blk;
            while start < gsize {
                runs.push((start, blk.min(gsize - start)));
                start += psize * blk;
            }
            Ok(runs)
        }
        d => bad(format!("unknown distribution {d}")),
    }
}

#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: i32,
    rank: i32,
    gsizes: &[i64],
    distribs: &[i32],
    dargs: &[i32],
    psizes: &[i32],
    order: i32,
    old: MPI_Datatype,
    large: bool,
) -> MpiResult<MPI_Datatype> {
    let nd = gsizes.len();
    if nd == 0 {
        return err(MPI_ERR_ARG, "invalid ndims argument (0): must be positive");
    }
    if size < 1 || rank < 0 || rank >= size {
        return err(MPI_ERR_ARG, format!("invalid darray rank {rank} for size {size}"));
    }
    if gsizes.iter().any(|&g| g < 1) || psizes.iter().any(|&p| p < 1) {
        return err(MPI_ERR_ARG, "invalid darray: global and process grid sizes must be positive");
    }
    let nprocs: i64 = psizes.iter().map(|&p| p as i64).product();
    if nprocs != size as i64 {
        return err(MPI_ERR_ARG, format!("invalid darray: the process grid has {nprocs} processes, size is {size}"));
    }
    // The process grid is row-major whatever the array order.
    let mut coords = vec![0usize; nd];
    let mut r = rank as usize;
    for i in (0..nd).rev() {
        coords[i] = r % psizes[i] as usize;
        r /= psizes[i] as usize;
    }
    let t = input(old)?;
    let mut dims = Vec::with_capacity(nd);
    for i in 0..nd {
        let g = gsizes[i] as usize;
        dims.push((g, darray_runs(g, distribs[i], dargs[i], psizes[i] as usize, coords[i], i)?));
    }
    let data = grid(&t.data(), &order_dims(dims, order)?);
    let wide = |v: &[i32]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let mut a = Args::new(MPI_COMBINER_DARRAY, large);
    a.ints(&[size as i64, rank as i64, nd as i64]);
    if large {
        a.c.large.extend(gsizes);
    } else {
        a.ints(gsizes);
    }
    a.ints(&wide(distribs)).ints(&wide(dargs)).ints(&wide(psizes)).ints(&[order as i64]).ty(&t);
    new_type(data, &a)
}

/// MPI_Type_create_f90_integer/real/complex: the cached type for (combiner, p, r), based on
/// the smallest Fortran kind with that precision and range.
pub fn f90(combiner: i32, p: i32, r: i32) -> MpiResult<MPI_Datatype> {
    /// (combiner, p, r) -> handle.
    type F90Cache = HashMap<(i32, i32, i32), MPI_Datatype>;
    static CACHE: LazyLock<Mutex<F90Cache>> = LazyLock::new(Default::default);
    let undefined = |v: i32| v == MPI_UNDEFINED;
    let fits = |prec: i32, range: i32| (undefined(p) || p <= prec) && (undefined(r) || r <= range);
    let base = match combiner {
        MPI_COMBINER_F90_INTEGER => [(2, MPI_INTEGER1), (4, MPI_INTEGER2), (9, MPI_INTEGER4), (18, MPI_INTEGER8)]
            .iter()
            .find(|&&(range, _)| r <= range)
            .map(|x| x.1),
        MPI_COMBINER_F90_REAL => [(6, 37, MPI_REAL4), (15, 307, MPI_REAL8), (33, 4931, MPI_REAL16)]
            .iter()
            .find(|&&(prec, range, _)| fits(prec, range))
            .map(|x| x.2),
        _ => [(6, 37, MPI_COMPLEX8), (15, 307, MPI_COMPLEX16), (33, 4931, MPI_COMPLEX32)]
            .iter()
            .find(|&&(prec, range, _)| fits(prec, range))
            .map(|x| x.2),
    };
    let Some(base) = base else {
        return err(MPI_ERR_ARG, format!("no Fortran kind has precision {p} and range {r}"));
    };
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&h) = cache.get(&(combiner, p, r)) {
        return Ok(h);
    }
    let ints = if combiner == MPI_COMBINER_F90_INTEGER { vec![r] } else { vec![p, r] };
    let b = builtin::builtin(base).expect("Fortran kinds are builtin");
    let h = register(TypeObj {
        data: TypeData::basic(b),
        contents: Contents { combiner, ints, aints: vec![], large: vec![], types: vec![] },
        name: Mutex::new(String::new()),
        committed: AtomicBool::new(true),
        permanent: true,
        handle: AtomicI32::new(MPI_DATATYPE_NULL),
    })?;
    cache.insert((combiner, p, r), h);
    Ok(h)
}

/// MPI_Type_match_size: the Fortran-kind type of a class and size.
pub fn match_size(class: i32, size: i32) -> MpiResult<MPI_Datatype> {
    let table: &[(i32, MPI_Datatype)] = match class {
        MPI_TYPECLASS_REAL => &[(4, MPI_REAL4), (8, MPI_REAL8), (16, MPI_REAL16)],
        MPI_TYPECLASS_INTEGER => &[(1, MPI_INTEGER1), (2, MPI_INTEGER2), (4, MPI_INTEGER4), (8, MPI_INTEGER8)],
        MPI_TYPECLASS_COMPLEX => &[(8, MPI_COMPLEX8), (16, MPI_COMPLEX16), (32, MPI_COMPLEX32)],
        _ => return err(MPI_ERR_ARG, format!("invalid typeclass argument ({class})")),
    };
    match table.iter().find(|t| t.0 == size) {
        Some(t) => Ok(t.1),
        None => err(MPI_ERR_ARG, format!("no datatype of class {class} has size {size}")),
    }
}

/// Reads a type's constructor arguments back in the order `Args` recorded them.
struct ArgsReader<'a> {
    c: &'a Contents,
    large_form: bool,
    ints: usize,
    aints: usize,
    large: usize,
}

impl ArgsReader<'_> {
    fn count(&mut self) -> i64 {
        if self.large_form {
            self.large += 1;
            self.c.large[self.large - 1]
        } else {
            self.int()
        }
    }
    fn counts(&mut self, n: usize) -> Vec<i64> {
        (0..n).map(|_| self.count()).collect()
    }
    fn aints(&mut self, n: usize) -> Vec<i64> {
        (0..n)
            .map(|_| {
                if self.large_form {
                    self.large += 1;
                    self.c.large[self.large - 1]
                } else {
                    self.aints += 1;
                    self.c.aints[self.aints - 1] as i64
                }
            })
            .collect()
    }
    fn int(&mut self) -> i64 {
        self.ints += 1;
        self.c.ints[self.ints - 1] as i64
    }
    fn ints(&mut self, n: usize) -> Vec<i64> {
        (0..n).map(|_| self.int()).collect()
    }
}

/// `t` made again by the constructors that made it, with every predefined type `p` in it for
/// which `leaf(p)` gives a type (a handle the caller made) replaced by that type: element
/// displacements and strides then scale with the new types' extents, byte displacements stay
/// as they were (the rule of MPI-4.1 section 14.5.1 for file representations). None when no
/// type was replaced. The caller frees the handle returned; `leaf`'s are freed here.
pub fn rebuild_leaves(
    t: &Type,
    leaf: &mut dyn FnMut(&Type) -> MpiResult<Option<MPI_Datatype>>,
) -> MpiResult<Option<MPI_Datatype>> {
    let obj = match t {
        Type::Derived(o) if !o.permanent && o.contents.combiner != MPI_COMBINER_NAMED => o,
        _ => return leaf(t),
    };
    let c = &obj.contents;
    // The children, rebuilt or as they are, as handles of our own.
    let mut handles = Vec::with_capacity(c.types.len());
    let mut changed = false;
    let mut result = Ok(());
    for child in &c.types {
        let child = match child {
            Child::Predefined(h) => lookup(*h)?,
            Child::Derived(o) => Type::Derived(o.clone()),
        };
        match rebuild_leaves(&child, leaf) {
            Ok(Some(h)) => {
                changed = true;
                handles.push((h, true));
            }
            // A reference of our own to a derived type, to free; a predefined one's handle.
            Ok(None) => handles.push((user_handle(&child), !child.is_predefined())),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let children: Vec<MPI_Datatype> = handles.iter().map(|&(h, _)| h).collect();
    let made = result.and_then(|()| if changed { remake(c, &children).map(Some) } else { Ok(None) });
    for (h, owned) in handles {
        if owned {
            free(h)?;
        }
    }
    made
}

/// A new type made by `c.combiner` with `c`'s arguments over the types `children`.
fn remake(c: &Contents, children: &[MPI_Datatype]) -> MpiResult<MPI_Datatype> {
    let large = !c.large.is_empty();
    let mut r = ArgsReader { c, large_form: large, ints: 0, aints: 0, large: 0 };
    let child = children[0];
    let h = match c.combiner {
        MPI_COMBINER_DUP => dup(child)?,
        MPI_COMBINER_CONTIGUOUS => contiguous(r.count(), child, large)?,
        MPI_COMBINER_VECTOR => {
            let v = r.counts(3);
            vector(v[0], v[1], v[2], child, large)?
        }
        MPI_COMBINER_HVECTOR => {
            let v = r.counts(2);
            hvector(v[0], v[1], r.aints(1)[0], child, large)?
        }
        MPI_COMBINER_INDEXED => {
            let n = r.count() as usize;
            let (bls, disps) = (r.counts(n), r.counts(n));
            indexed(&bls, &disps, child, large)?
        }
        MPI_COMBINER_HINDEXED => {
            let n = r.count() as usize;
            let (bls, disps) = (r.counts(n), r.aints(n));
            hindexed(&bls, &disps, child, large)?
        }
        MPI_COMBINER_INDEXED_BLOCK => {
            let (n, bl) = (r.count() as usize, r.count());
            indexed_block(bl, &r.counts(n), child, large)?
        }
        MPI_COMBINER_HINDEXED_BLOCK => {
            let (n, bl) = (r.count() as usize, r.count());
            hindexed_block(bl, &r.aints(n), child, large)?
        }
        MPI_COMBINER_STRUCT => {
            let n = r.count() as usize;
            let (bls, disps) = (r.counts(n), r.aints(n));
            create_struct(&bls, &disps, children, large)?
        }
        MPI_COMBINER_RESIZED => {
            let v = r.aints(2);
            resized(child, v[0], v[1], large)?
        }
        MPI_COMBINER_SUBARRAY => {
            let nd = r.int() as usize;
            let (sizes, subsizes, starts, order) = if large {
                let order = r.int() as i32;
                (r.counts(nd), r.counts(nd), r.counts(nd), order)
            } else {
                (r.ints(nd), r.ints(nd), r.ints(nd), r.int() as i32)
            };
            subarray(&sizes, &subsizes, &starts, order, child, large)?
        }
        MPI_COMBINER_DARRAY => {
            let (size, rank, nd) = (r.int() as i32, r.int() as i32, r.int() as usize);
            let gsizes = if large { r.counts(nd) } else { r.ints(nd) };
            let narrow = |v: Vec<i64>| v.into_iter().map(|x| x as i32).collect::<Vec<_>>();
            let (distribs, dargs, psizes) = (narrow(r.ints(nd)), narrow(r.ints(nd)), narrow(r.ints(nd)));
            darray(size, rank, &gsizes, &distribs, &dargs, &psizes, r.int() as i32, child, large)?
        }
        other => return err(MPI_ERR_INTERN, format!("cannot remake a type of combiner {other}")),
    };
    commit(h)?;
    Ok(h)
}
