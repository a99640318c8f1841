use super::*;

#[test]
fn builtin_sizes_come_from_the_handle() {
    assert_eq!(layout(MPI_INT).unwrap().size, 4);
    assert_eq!(layout(MPI_C_LONG_DOUBLE_COMPLEX).unwrap().size, 32);
    assert_eq!(layout(MPI_LB).unwrap().size, 0);
    assert!(layout(MPI_DATATYPE_NULL).is_err());
    assert!(layout(0x4c0004ff).is_err());
}

#[test]
fn pair_types_have_padding() {
    let l = layout(MPI_SHORT_INT).unwrap();
    let mut blocks = vec![];
    l.for_each_block(2, |o, n| blocks.push((o, n)));
    assert_eq!(blocks, vec![(0, 2), (4, 4), (8, 2), (12, 4)]);
    assert_eq!(l.span(2), 16);
    assert_eq!(layout(MPI_DOUBLE_INT).unwrap().span(3), 44);
}

fn data(dt: MPI_Datatype) -> TypeData {
    lookup(dt).unwrap().data().into_owned()
}

#[test]
fn vector_bounds_and_folding() {
    let v = vector(3, 2, -4, MPI_INT, false).unwrap();
    let d = data(v);
    assert_eq!((d.size, d.lb, d.ub, d.true_lb, d.true_ub), (24, -32, 8, -32, 8));
    assert_eq!(d.flat.nodes(), &[flat::Node::Vector { off: 0, count: 3, stride: -16, len: 8 }]);
    assert!(layout(v).is_err(), "uncommitted types cannot communicate");
    commit(v).unwrap();
    let l = layout(v).unwrap();
    assert_eq!((l.lower(2), l.span(2)), (-32, 80));
    free(v).unwrap();
    assert!(lookup(v).is_err());
}

#[test]
fn struct_padding_and_markers() {
    let s = create_struct(&[1, 1], &[0, 8], &[MPI_DOUBLE, MPI_CHAR], false).unwrap();
    let d = data(s);
    assert_eq!((d.size, d.lb, d.ub, d.true_ub), (9, 0, 16, 9));
    let m = create_struct(&[1, 1, 1], &[-8, 0, 40], &[MPI_LB, MPI_INT, MPI_UB], false).unwrap();
    let d = data(m);
    assert_eq!((d.size, d.lb, d.ub, d.true_lb, d.true_ub), (4, -8, 40, 0, 4));
    // Markers survive nesting: a contiguous of the marked type steps by its extent.
    let c = contiguous(2, m, false).unwrap();
    let d = data(c);
    assert_eq!((d.lb, d.ub, d.true_lb, d.true_ub), (-8, 88, 0, 52));
    // A lone LB marker sets lb only: { (LB,10) } has extent -10 (MPICH's datatype/struct_no_real_types).
    let lone = create_struct(&[1], &[10], &[MPI_LB], false).unwrap();
    let d = data(lone);
    assert_eq!((d.size, d.lb, d.ub), (0, 10, 0));
    for t in [s, m, c, lone] {
        free(t).unwrap();
    }
}

#[test]
fn subarray_and_darray() {
    // 4x6 C array of ints, the 2x3 block at (1, 2).
    let t = subarray(&[4, 6], &[2, 3], &[1, 2], MPI_ORDER_C, MPI_INT, false).unwrap();
    let d = data(t);
    assert_eq!((d.size, d.lb, d.ub), (24, 0, 96));
    assert_eq!(d.flat.nodes(), &[flat::Node::Vector { off: 32, count: 2, stride: 24, len: 12 }]);
    // Cyclic(1) over 2 processes of 8 elements, rank 1: elements 1, 3, 5, 7.
    let c = darray(2, 1, &[8], &[MPI_DISTRIBUTE_CYCLIC], &[1], &[2], MPI_ORDER_C, MPI_INT, false).unwrap();
    let d = data(c);
    assert_eq!((d.size, d.ub), (16, 32));
    assert_eq!(d.flat.nodes(), &[flat::Node::Vector { off: 4, count: 4, stride: 8, len: 4 }]);
    free(t).unwrap();
    free(c).unwrap();
}

#[test]
fn freed_children_stay_alive_and_contents_hand_them_back() {
    let v = vector(2, 1, 3, MPI_INT, false).unwrap();
    let c = contiguous(4, v, false).unwrap();
    free(v).unwrap();
    let (contents, types) = self::contents(c).unwrap();
    assert_eq!(contents.combiner, MPI_COMBINER_CONTIGUOUS);
    assert_eq!(contents.ints, vec![4]);
    assert_eq!(types, vec![v]);
    assert_eq!(envelope(types[0]).unwrap(), (MPI_COMBINER_VECTOR, [3, 0, 0, 1]));
    free(types[0]).unwrap();
    free(c).unwrap();
}

#[test]
fn cursor_resumes_inside_elements() {
    // struct {short at 0, double at 8} x 3 elements, packed in chunks of every size.
    let s = create_struct(&[1, 1], &[0, 8], &[MPI_SHORT, MPI_DOUBLE], false).unwrap();
    commit(s).unwrap();
    let l = layout(s).unwrap();
    let mem: Vec<u8> = (0..48u8).collect();
    let total = l.size * 3;
    let mut whole = vec![0u8; total];
    // SAFETY: mem holds 3 elements of extent 16.
    unsafe { l.pack(mem.as_ptr(), 3, 0..total, &mut whole) };
    for chunk in 1..=total {
        let mut got = vec![];
        let mut pos = 0;
        while pos < total {
            let n = chunk.min(total - pos);
            let mut part = vec![0u8; n];
            // SAFETY: as above.
            unsafe { l.pack(mem.as_ptr(), 3, pos..pos + n, &mut part) };
            got.extend(part);
            pos += n;
        }
        assert_eq!(got, whole);
    }
    let iov = l.iovecs(mem.as_ptr(), 3, 1..12);
    let base = mem.as_ptr() as usize;
    // The double of element 0 and the short of element 1 are adjacent: one iovec.
    assert_eq!(iov, vec![(base + 1, 1), (base + 8, 10)]);
    free(s).unwrap();
}

#[test]
fn cached_layouts_follow_frees_and_reused_handles() {
    let a = vector(4, 1, 2, MPI_INT, false).unwrap();
    commit(a).unwrap();
    let la = layout(a).unwrap();
    assert!(layout(a).unwrap().same_as(&la), "the same type gives the same layout");
    free(a).unwrap();
    assert!(layout(a).is_err(), "a freed handle has no layout, cached or not");
    // New types may take the freed handle: each must get its own layout.
    for stride in 3..8 {
        let b = vector(4, 1, stride, MPI_INT, false).unwrap();
        assert!(layout(b).is_err(), "uncommitted");
        commit(b).unwrap();
        let lb = layout(b).unwrap();
        assert_eq!(lb.span(1), (3 * stride as usize + 1) * 4);
        assert!(!lb.same_as(&la));
        assert!(layout(b).unwrap().same_as(&lb));
        free(b).unwrap();
    }
}

/// Bounds and blocks of one element of `dt`.
fn shape(dt: MPI_Datatype) -> (usize, isize, isize, Vec<(usize, usize)>) {
    commit(dt).unwrap();
    let d = data(dt);
    let mut blocks = vec![];
    layout(dt).unwrap().for_each_block(1, |o, n| blocks.push((o, n)));
    (d.size, d.lb, d.extent(), blocks)
}

#[test]
fn rebuilt_types_scale_element_displacements_and_keep_byte_ones() {
    // MPI_INT replaced by 8 bytes: each type remade from its contents must equal the same
    // constructor called on an 8-byte type, in both the int and the large-count forms.
    let wide = contiguous(8, MPI_BYTE, false).unwrap();
    let makers: Vec<Box<dyn Fn(MPI_Datatype, bool) -> MPI_Datatype>> = vec![
        Box::new(|t, l| contiguous(3, t, l).unwrap()),
        Box::new(|t, l| vector(3, 2, 4, t, l).unwrap()),
        Box::new(|t, l| hvector(3, 2, 40, t, l).unwrap()),
        Box::new(|t, l| indexed(&[2, 1], &[5, 0], t, l).unwrap()),
        Box::new(|t, l| hindexed(&[2, 1], &[40, 0], t, l).unwrap()),
        Box::new(|t, l| indexed_block(2, &[6, 1], t, l).unwrap()),
        Box::new(|t, l| hindexed_block(2, &[48, 0], t, l).unwrap()),
        Box::new(|t, l| create_struct(&[1, 2], &[0, 16], &[MPI_DOUBLE, t], l).unwrap()),
        Box::new(|t, l| resized(t, -4, 20, l).unwrap()),
        Box::new(|t, l| subarray(&[4, 5], &[2, 3], &[1, 2], MPI_ORDER_C, t, l).unwrap()),
        Box::new(|t, l| {
            darray(
                4,
                3,
                &[5, 6],
                &[MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC],
                &[MPI_DISTRIBUTE_DFLT_DARG, 2],
                &[2, 2],
                MPI_ORDER_FORTRAN,
                t,
                l,
            )
            .unwrap()
        }),
        Box::new(|t, _| dup(t).unwrap()),
    ];
    for (i, make) in makers.iter().enumerate() {
        for large in [false, true] {
            let of_ints = make(MPI_INT, large);
            // Nested once more, so a remade child is remade in its parent too.
            let nested = vector(2, 1, 3, of_ints, false).unwrap();
            let rebuilt = rebuild_leaves(&lookup(nested).unwrap(), &mut |leaf| {
                Ok(matches!(leaf, Type::Builtin(b) if b.handle == MPI_INT).then(|| {
                    let h = contiguous(8, MPI_BYTE, false).unwrap();
                    commit(h).unwrap();
                    h
                }))
            })
            .unwrap()
            .expect("an int was replaced");
            let direct_child = make(wide, large);
            let direct = vector(2, 1, 3, direct_child, false).unwrap();
            assert_eq!(shape(rebuilt), shape(direct), "constructor {i}, large {large}");
            for h in [of_ints, nested, rebuilt, direct_child, direct] {
                free(h).unwrap();
            }
        }
    }
    let unchanged = vector(2, 1, 3, MPI_DOUBLE, false).unwrap();
    assert!(rebuild_leaves(&lookup(unchanged).unwrap(), &mut |_| Ok(None)).unwrap().is_none());
    free(unchanged).unwrap();
    free(wide).unwrap();
}
