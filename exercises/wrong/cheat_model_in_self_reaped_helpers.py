# exercise: ch05_idle
# file: idle.py
# loses: test_predict_other_tiles_and_hardware, test_predict_at_a_formulas_speed
# bug: predicts nothing: `cheat_model_carried_at_import`'s copy of the course's model, run where
#      the CPU-time count does not look. At import (before the guard) the worker ignores SIGCHLD
#      and becomes a child subreaper, and forks a helper. Each call hands its arguments to the
#      idle helper, which forks its successor (the fork's cost is its own), runs the model,
#      answers and exits; the worker waits for it to be gone before it answers. A child whose
#      parent ignores SIGCHLD is reaped by the kernel, and its CPU time is added to no one's:
#      each reading of the session's CPU sees the worker and one fresh helper, and the batch
#      stays within the formula's budget. Where the action cannot be set (refused before the
#      import), the worker waits for each helper itself and its time is counted (the model's
#      cost: the two batches run past the budget). Its exposed_softmax is the source's.
# ruff: noqa  (known-wrong on purpose)
import base64, dataclasses, importlib.abc, importlib.util, json, lzma, sys
_B = """
{Wp48S^xk9=GL@E0stWa8~^|S5YJf5;S{YuBwYYKh>B*^6yv#ynWNsi3(?;~Y;C099)MY_O_+R*F$^BSI4GR(NhTil6$}XP{2mw7
VslJmOKUMOSZZ!LKM(>RfY+)BN3gmzS@*=5$&6Z2a?IF-qbOU0CQ76xC{8>eS>T99E>zbxISFIFcY^Q|NhsAM>`0c(BQ)n58X-lV
VXw{2BhdR^c#3C(RHtmDs_igl#MgkdOv|%kp7Tzu7}hYhrYJuv!^$qB%ZSTyg_#gT{efqwZaWxa)7HgrD08CNzjco<K*aget3S5e
5`$a0Nu(yi)MZ#))>L&gi{nXs_qoH>c%nfK*YH63jerZ14Y&E<TW|y)>>5_(NE2Jh2(FR@-&5b_SYR_!>)-h7q$jVoN}M34?Y{A&
`?J0Gtre2z2)l`Y!NWX^E23u9?7TxH;mt6t*jw~Vq4D7^TBjVR+T6Zznp`aYB=)<!j^j&Vbc?~#0qN#1<avbsC*OQv3Oj=?Fr2bR
6AUeR{N*<MG*Ew$yoNLdD{4kj02@VV?H3kB%ND8B)XuX777ifQxpwFIhkuDDRVG{Wie_wjL^=wy?eC`$DFy`4>heldDUHsaWdgh9
+uV^`Iu%i@Ru=-X-NdR+oKOlMFNQ%aui5BZc%SNJZr}t-FFntMz()(Vk@YBNq}R^^wJTZ-_Qsh8ZDWMt&j9JiNV3*RYcn&jz#{#J
v)7=7H72?>-Hqz@2s>lTSjnXxqloWGouv;y4s#cY4c$q*^K4K=51(X@8S)o3Y7RrkC`Ch}TV-!rA3Kn~=WEd|G7DrpCP&<}iQ3A)
#8&EwQQV>|Z0|#%&NUHPb<+L}D22Vp12%qRaTqQ>a1+)LG{^gLa@?>McNsUlHZsbYLVdE>f>)L_`Gfi;MmLAK!1k!C;SpXjOW#q+
ootJA0JPVlej?LzSFfxmIN%PED_OvB_+yq@@X%l|9GWj95KJYO=`<#VW4X4?`~GKW%@{C;=mSgmD1Q7;&_sX7#RSXZCq%8C<7<PU
5mL1Xv;qVB@T<P^GjsQgnc|h-$@&3@(>^&b0Sj<%{suR8s&dE|d<o%Ukxz`B*U)8u;Rlgw=5#kmM8Ji<?{s1tw{z8+a?~J>*<@zo
!D^?AJAk2c;rgkU-fm=o3d*hZ^c)W2W)hQESa%Y$;@R%0g{Dlvv*lgrK=5tf&)Ne{|H>bEk6xt>)ajoB!zp3inDY47+?zW_;YJA5
gLKA2bfFEvpGyM1+-T~cy0)c(`Lg@|gFvmn=>;EJFJA7N044#?yxxJ_1A~mI!QBQecDe!1-SEj&VFhpXEF$Gh>5*$cB_jONwgF5V
yTP;jrI<dYC%nG2)WDU`;-BhpU4*Wp_8pC|;ceyD*;BQ<25*|PWs_|D!I!bc3cE)+NJQBXFWi@^&xe?bR?-xOmJ=Z?$e>iYHJk6l
y8thXi50t4Ee8dR#XX{%Yrf`$f99~5z9Rv9EYBE<oGAnS1Yo=htQDuU!42HV9%SQx_I!5R9F(qPLHd7|vQA<pbFk+_YMCFeO8?LP
aX5_;kM}y0#zn|My3SZ^?nL_}Pv4yprI~g7D)iWD=y$KKJjw;|%d*4J1Gn8tL;9&I#Ziy5u-iQw@eN{|GU8d79H|;<G?j^&N(|<-
-rHqXnWwFuy!`3*VFa)dsN25WRZU(L1Sa&-_JE(K28C5H(-7^rtO~}fyapM+ql)WZf|vh<h|5j{wrtA|1zktzTh%Fx(C0+mSQr6%
Z?pSAItdLVUn0t_Pqq`YI<<E9p%QQg)T$HO3~N67=va^8#)@vH9dnt?_K(W>dhUZ*{=)IY%A$@87VUEIdje{%j87U7Rjv31!Jx$d
9x}G4UCyti{Q;j6mZs`alB9k&Fvn>1y5XA{q^-Uf@_B8XK*97HIz}ZiM}{XO3Il=|+PMtC_IxXTqpYM!M<c<AL)?y~97n^m`~LV;
YKxWc1uYXBe(#aqf~2#w$q(4nGWl`S(*OkP_Z?Zb|6z<6ki}8J-TwT}W%!9@_3e+bH>&zrRO71K6Jl3pHKll+K2l?bS3t{#j6Je0
I{2PSdwzR%?uc-Y+-)Mr9mo*oyKvEDBA$=&TVsBqkf|zN2cl;5fy06On8vp{@|+Ey{S3T13BJynG__{+O+yy+(gaz?`2c6XU?cw|
bEt>Wg@o4pfm|YCJ8n5gmwEdQne&O9tPX3k+2~F~kAY^ANlTHtZ>#bVD3=;?k(E||_xGNHGY6kR9o)}ce)<fXvrvFP^b8w~AdJTQ
`ChKB-2_lr!%y#bD-xA{%eX2O3MXk7vm0(<=nUS@o=>5R4!GD~D!6tM{Kkv<6{r(e_}h+;kZm}@rloSYP};KEKxNa<1>n=I-Blu+
fi+HxBBBeJK*N_qN_~Oe%^_o3o;+(@46w^_?Ecf0^$ND8`D;81FeaB7DN&NxIEp^{Mj?o<ydq}Xut|H}dHv*PUrqE8QQS(xV~wl^
O`eGUng(KzT5644)1f3s&*z7OYxR^@2F+>Nx@jSyw9W80-}dwjPZYpKb_Gb}=E=>#fxV=~rPs;y@vA<RW}oW>bpkRb0R}iKr3Q!b
@#+dLi2wg$o=7PJgWh#zXW|auTp5R>gh2cUQ`YzU{B%4wALJmBuFD6cJ;7PNdV{vHLuC0xNX+!kZvTWPVeCnk2DSN%g^mm?L;W!O
RQi=ySjq_Z-+6n+7d|M{(QFppAB1f=wbL@uo&CIi$P&hi4nT*%w{LDQMB`j}dYge5bW<dT2$|9`hMmG1uIsV7G(sB4*aML2rdSm}
r3-b5$<m38Jr@`ff?x6j8CB-Dw6G}@qgqdOLEhOwlt$nCb|Yq_8HPl*+)R^Qe{@wLk&b;i$xx%y8SrE88+;W7#o)UR76a+hL@D8|
G8w2%nC6h;-K7rzfSJhRGRd$Z+PZ05kd@p_?HB2=%dt3NvdDkw!n|g%NbOb2jgJPQNEwk>I3q3_#|*>BUtGl2r1u%j!?@toMHoFJ
`yszo_T_U*MRzmHr-X6Q9}lDGY+5mRS$gpw;hwYlo+slPCDGupdE3(UhOZB=({tz^vU5=0mBXkl!bL=gy}z*{S<F`a@hd}QMV89B
P})9IF83eF^^itF<1B_)u22?z;T)S5aT=u`wIT8c_^2HoxD4rtx&4kx1N-9_=Xp|U<bk{4FEyoA4dck&U^nzoIbl&H$}P-9As~1e
bwTizO*+bcUJE|CaJPdFZeqN~tE#^-0{t|JQ1cBlXOTe9L14!wJ`GC0r+I$PEg6x~Z0~76JuQzPxY_TMKh~T>`H!h@IpfL5k<tsy
?)$Zs%yOK#Rl}(EWJR)XK4acYrO1^8Ey5j^ufxA4dSF&8!sqo$Qfj#dXXBB{GGxLp6>MAAO&K-;ZAPG^aK1XvuU>KisPX4@2G?kv
A=Mq2__z};L%8;p<w})ccc7zHVmM6<sTthp4o!gr7s<KkrW{9Ac^x4?yW%z=L9##7LZcv=|FDVXKHq&F{o$tWpP$@%F+>Lr`-XdA
3ROTj_0}v5Zv%KU>`-nX=LX@)wodWtdXpG%_7vk%bz0M)kZR<j&ODcJ7~cBmNhn};Z%i_)OU>n{A7icRNP5s$0LS`)_7tQwA>&Fg
i_*nHybrWs%Hf7Kwv1wf!RR10$R7_^QI$pf7867{&b~!S{b%u0R%-!G<OAlvf+U6Hgh!X+q6*Tb)!4HW8pDb*%eH17F`@pce5~UA
?Gw>#fdEk}*j5b&mGA^|V~w4mB)l&wUVrDu^mXyWV7ugwl-GET$o9#)nAqie(xSRLoHUDF=d2Xw68v|MYbbA(C{-1K6D=EAol@Bg
;?}E1J%64#$G>;<5T^3lXdVhj+nb@2@dLS!v$9vSp@XmV1uu+qxSqS|d~#B4Z9JDlp(V>CSX^f>zp&CiRYUsk!E5I!P_zL$cPTo&
I$V{cd}>s9T3v%kDMc<8e+rjpM-h`|`PI}Qq#i21DsV2m2@9VE+IDu$2^vKlVhA_EcM5%Geb?T%GI#&Lj5rS~fP)7LH;YBC+`l%>
eG8l6qpMN+w}-oQv^!FiP>}+5s#(Zn3Hn%>E$~)W9_V`AI13oEr0oQd+k9XU%hpIUcdqJ|`TT7m6`pz(4jakZQ-H_F0})U3TS%Tl
=AnbxiI7(&MxFyx%pewrfSn~jM+V$T$=@w70yNG-?#oYM=cCLuKSpXhLP=w%{KjmqVtvJ=`F`aOAQA$(D6q7rWBD6JhF`zOd+5%s
CWZmS^W)`!B$5sO){4fdTJfNcYTqMb$D<DJ(*uk%S%~hReHQ<MQ5(|rmbp`qd{kl?py(fU&rjSsR)}KX;o1!|C6Eo~xM2!sFvwk7
gR<a2gw0IqVbepv(%{y&`p9yOJgo0zb#JS^k(fr+CU`h>zwww^HdcBq+R0sy2-4W?TCF0tNG-9ePo90s>GiLQe|`%vAvjU_e2n)o
(3!eJZrzE5V65X0CV*_8szrM_GZEK^#hZzY{QE?ESrx40UArCN!ua<pYmn-myf)IY3h<efkW|P6om@{*&edPZNo2Gfuzm^6@{&hT
p5*-NZZ;@nfc_An!9?tyrF%q`t;&Q#rs4RhA5&2}Y3nVK0Htii=kW(gMo*>B5PQ3}Q-j>?>%_~*ESDL818pS-xLk=lgwHwzw2^`=
HVr^6wG=@S7VQ`p=kIvfO4&SPkUN!7X2yp-fOX;OPs8vvXIYLko4zI&n(9ZY6Z&7`rb-fEXfvouyps)h$^_udVS9YXFNB){VBthx
N#^ra7U^mL^uc3x%VF81lYIgo5KU_|V9B*AJ1IXJlQI2=CL0+(s#VkSn<o<<O;4%vbbcpsx9@>wK{CX7@_Pg8i=neW`A=*GKC%=b
Ml4jCy!dReb)K(O>fQe<(zMa)J4z)2b+OJ#yh5+{2r{7lM6D3x(qJ1UpZUrqWtoLi4jwQnEJTTiPG?9_q0uHZ{6x?8k(n+fMv`Lb
#J5psz(Ytm3T9b(Wn{BiJb+BoA%l0bW3rX#MbWtg3{hb$g3W(%plVx$T%91Lt=$~nsou?KzN0tXILzv&eWy8Je?t~0N11<VDLJKX
n4@dStxsW&$2U##SUD@$MA<CWJq8Qe80#-8DQDfPg+LnqkobT=d|e)6DKeRiKa{bBtG}F6N^_aMTAoC%4}e4`t+GrbZlV=S#*>!x
Jou_4)7Y3$VGBy8pM?P8=G@SCCAZd))_lu=p_@JT<!fS7LZ~$G@^`rMiGmp|;Jb=A982(uB(NJ0VHd$2Jk?H^Zr(5s@+zs(@_rcP
n_Ntv?Sm0sCCuJ;VLCA-ZcbQWwW{k*Gw6Xj>Qfa$I#gbtcY7VafM3F9*0y`;s4UoT4*AnM=84Nt4qPoWia-7^2n%(!_%d5<Y$9Jk
1;9L-23MkiQIa60Ml9fAcRg;RkO1)pW<#ypgfg+-BtYB@9}dM889N_8`0?2Lw?T+=j?hy$qa)qk&@N%!c4eXW^(ie|qNn4x4kD~f
8w?=P=f=JgH(TlDn^+`SDok^{Q^w{9gDs!f5l+eSrXBTD^y1Hiem&czOMVuPp~R%>n7~--<r0$;um+5`MQ}m^O4@fJe*Alr*OE9G
greYAbuhZ&_7P10IDsNvt>_3@!v2ckrb~U<#-o+xUl<aMPbaXu8oYH^#b;jk8)$}aFTGtjt<2ut;=BXLd)*HNuuA5S<&A2Qm7XFZ
onUK<MK>a=dncT*gO+H6e#ml=S*^MGP6ripuY*Z=YD&?;(<|uWL(SA#krnnaOy3}lLP`IpTVYqDDBLu2QG};7qO0`<zrcEkxkTZZ
;owJ!k4q0ZD<)#UUNUYoNk1}?_Av)_dggNZKK<h~v!fTC5NdnSN)WSw*(iZik|}afw`T#tkB5woW}jE~ybaUOAUU?a=L5K1N-<1c
(AmV=!{lEZXP_mR5^hJjH;j`4nZA-VMreX<Un9FBFeC<jBimN?MLe4Y-t@~vMM$m}Qci_}0l9GauE}m?|IK+opuBeJe*%-(2!3*q
?F=<dd>(c#C8MU3$~|=d%i(&$L&Lnrjn3VJ<QQDO8~HyDdJbe|j7WmF?>betm;Z9gCVg=6v8iS;o>vNkTmKwHG4yu=Dg(orvRRh&
O3pR94y_hj)*Kq=OYoTPR@=y#PwPe_Le!3q$F6f$EU^+l^M_x&pztg8`67{82>lZ#L*!ZbH7bAc_$(rKKB0anlbm2XuK<$PDubxw
-FV5tHiwK_NsqL^=;Q}mm9a^_SVtzPSFQeObOL!v^hpVI{~PC|3pk5SxX(HnlZ2}#@&c-Dv$B(sAxwOmh9;ql{^V|I&coF;ePgu7
@C7bk0Se5t{sm1R&9CP5UmK2Ep8(ypnKVWf$beu4+zGX(v|G20Hyj{r%fVXRT7NU9D=7#n$no-flm(NNTR)oe)gs%sFOjLRf7<aJ
4TnyG(8X_iy=_M#1`->@@`P5^;lT($BR$x89>g8+=zp*y1%L10gbn2bUP@j3jeeFcn{9%;1G>25uD5$c>u*3aMY#hOBaidB<-!B1
-^Nk4hml|D%!WmX@fjLXMUQ#Js9EMGN&NY7GFyL@sk;Q^42!ABDEP-`I440j&!zXO+A=x?Y|=rX*CVOR$E_~sRS1hjl*xo}*lj5>
c36;G{x0rbDTHYevem!CsD1v$yS?akP@{|T=pb=K%eIB_Thp)#Mm)$2zMBzN{6B`2_c#?jkwP>e-=nsxkxdY5Eb_gBxa+P7D>%^V
P*DpQ(MMylTgA;vgvd5Jdm)es5ST>Fs6iv9G*Da{ZaN^w*i0_hvG=FGNQfH}=qaL@E2qaOjiYdtx17=neB$0l=3PqOB@*gdBYU$a
r255V@=B51lvfeTH}#nVWYHBvQB9JblX|>^L1F%y4-x}TgZn$20*kXyP}??yc;bUwZh5Hv^(ZQI)MFhv(Te}{jvEDH2j$Cudh?YK
iG8oV|G3a!t)1P<=Q`smXI~S`(@n)?5qx+>(q2eHxrs5@7iOy8j6&e4QfI*;Q6q45eXr+V#FY5Wrh}hn`Q^eJiyHOldZFP9BuL_g
mO$;Gd<BeSY{dqrfWG7BL(_urfyLi|4Tk)=4<HcjT`36^*=Cba_=a*;Er^8AMgIzNt^Mqd@?t>E6w`ODcvoYSJ$6>my_9?cAHY#3
6ZB)t=he<L8gW6D%wskg(h&do?9AFrP@qZ9+_r^|Ylw#z)O0zq+T1poG#}!M&bVLF4ugHUkl&(n!M)XO4rnaYd=*<ohOC$PLeXWz
a)E6H&vv|JWF#LZ4&F}bBq)%=^K)?=WPq+nm;Z(CNF$H)j}ld21FJv${0wzxs*8OX2J%J5)=4cXXD<K{Iup%RtWMn4_H~hmJl%*?
MNps+T&JMtu_LVz3u_y>!_OIOmV6<&vR^Nus=h?nlJs<%l>Dq4!`Yx9HrV=Vb;6D&iT!(k057)@beXuN9Yy%B3)wZIlsjE?ZFmVm
Mp)$Ve=>h+xgrgke3c>H%Sp@p9iQM-xV3|#xwR@~7*6J?X)`Yqo==sHvascGa2EGT^?zi!b2ZC8aI^k;@#T-i+4Gtl{4h#?%}lcF
?pWepTOQ>ovm8=@@n@%!oU)}eiTACVZ0M)#kOepaj~Tf=b*E{liPnHuf)%cWKFX`gILRb;uy)Ws^-%UZI7e(TGH=T3`wd>e7pV9+
x!?AOv(upjt%ugB#V3Ir`gb>bP(eBg)FsKn<e<}T6X=nG_00g{IakB?dg+G*8CZvsqmAJeA~P-5yr7m-Qtm@&dkep&?<B|T7e)OT
fP3^XilHIdkn~oCN2r(A%w=S0692qD9Yx?$HKAh<U$3UF`T&F4Rp2~#d$=g<t>tXD&6^N(sklMnQ?+qIN-?E;YM5K=nv3RO($;S0
pqv}p=RprgUK^p{rlUk1s^Hg4>9!0Hq=H!vyE>;iZSPxb0%@j)SRALpy1?HHT_ZGbLw35*^zt#@DQC@&vWZ+GgL4<cFGi+pfV&Wg
RjKPgjpDNE8o{S(QU^fvr>3~uYf_w$1&`KHr>En<FTNO026A-cT=}iUCco6*N9Q04iIjUlcNT{-*ink*6W^qOAAG$lH!bDc=c(ij
$4l+~@N<DRY?;fL`g~N{2TlSrERU(H5JENT0%YMw3cMTmB@H;F&QIEJa`%wVCFzhI>WbEpy-9?;Vo3AAEbp{l0<u)Q9Yg=-2(5}t
y+3<r%ed^!kww8@9>>4UBlQI#+N2`fZ*H+~t@Oxe3qAJJOvOIH#OX^n&{el2N9584VGqB_c&-_%>%{k5JbHpydnDcf>+lB`DqSD{
Ul<v|gKS?Kt|D;=_~e?0%uQ%c<9+n5JApWS&i%(r1Fe-aku-#jp6nqd<1i_J%pjW|<4^Vp`f+S-50?-@C$K^8xv5ubL=>SfdAED)
+s{<LCnOkhz4EydW45k6k-xLVw{<0~Ks6I)gL}ggQ#XA$qIK6FCM@)0z{bGl3qOl0hNcnFc!)Dm-qRfgq5dF|9vCxp(x`1{1zHS%
!POrV`<`Wyu60_VQK$V+Sb8GmVVHG&N86*A_M!gB75UK0BX{Vas66L$q6S%3WA(x?XnO&=NerseI0{f?EEJqQ7eK|6c8o@}U}5&*
L;eW9_H_D|k&lf=JB%l}X%9KR3XmvoC)B*5OiLmGxBY{l7ggp}dj`CfY}G;&URm%6w`haxyq~~+3KebHRz!YR#y5E`%fL=Zw9}0|
MUbMQ^dbD|X<Ck$9X0h$@{?tpy1#u~c_cU#DbY}qtv+C_T4Yamn%%3)X}^aNhONwt(GyColN!Sjc+SMqj6~curuX2w)A?oy04|)D
%i^I?fpn3yNmAkxlqredCCO07f8Beq60p;s3&xoIs(FoC2|C*4MRbe8(*jxMgl<pVT*sNl6~%*af=@UAHW6e~k7SYETw9l}y_VT+
ZhhGP<Cq3N;!$0Kz6f~}mFpmx{@;5m^fLI!cRXmz`0e1lARBVz0Y-(Hfu&tv_~1O2IEfh$Vh2Yh`(_?<`O()o6VkWP6nI%6ou+ZA
Z>{NKM&6A)3t!KW1Tj0#U`P5tgX5xsUS;|#cmJyp$QANr9M!PR)KUpF)dW<euJ(W}0XryB^ZCJ(G_<lYi-qed%WM`9?G;*I;h=X5
fxv2!jB+;z?-%=KHPY|kA|Jvj&lB~RMriq}<lg>S2&3?F1{p>AyaRXI<p>Y7`5?aOp|ZZ^z0Sjh2(jgN8#$Avm$g-YKb$f7JUvH6
8U2u9yRHk}a@|eX*^5~Foce;0=oBn>CO)XGXMK)+kbr=ZEW`R5X}eb^!WvH0Le{f|#xS$tqU^PSFj9nsA57A7K<hyq%BpUrJlVd2
JOoRR`@^duEwhiX9{c9>7#!cYm!l!EbGyGXIBsN=@Z-udfNB@p>j8y-u!;ac(>DFjqabN?T5y)qgVAS-_{~tvuF(*(L}eV{x(ob!
x-OrbJLpjPe63853BT38697IG7t!6y9uwHl<pSFfAPGAS#+@)AInc#t_Liif9x<~No$ok)I=F%4u-N>SB4jx)dyUYDx_u18{iDMR
S{9wk*RyTEQd(HH(SVoOZgOU)h}CXMJDJ=0=Z4GbxRMHq9$B({nui*?>(9Eja}gM7LKUEXG;LDy=<NNX@XU7UxDo$@3$*b_kty_%
K%-Gg&z$c+3dud~sxl4h`YpoC_6?{n^o8^S4F-;-CENUbd)AgYhSB6!!=VH#?ObsH-RW5_X}A}^D+}N*<sFcS6g+|dS2Y;t_<&a`
c%~<y;?uw$0m#XQL3bMJe($4a`J&_#_?woaP^duWs84!u1S1Ck#2$$$L>L?<HQuan{e{V_%ymQ%9hbXjtu9FD$d=miz3L4bu%Bxt
nw|bZdZZk{GBryEs)(}9Lhb6ES#-Q^6*m*TNL>d-5~A=5Y7t*Xz~d<m*=|PGTn!v|4OEbUm9(?umNE|TFxkDpn9h(dt-_<WJ&iH*
*=H{D^BaOB$AfC-S^{);KA2NI92ZfmcS2|_8Wovq4H6gYUQp!Q1wviRyTqq1m{J`uIY@)_=6f1#k*)5vPo!90+rYMUz`wcVI<aB1
gAqOx9$ElxMJIGwTMJGl5qLqO<o)4OuiG523MNH-WQhF|M!zp>#}?<^mPY^NuGkD{(U*pw6zy9_B9R8ZmpGwKKgWDN-VA2#wrY5)
8l+?w#8v-!0$mCS{L)(gJg;%i(_pOK$N$e~W1{5EtD9?*7C7EFeu&5ei&`~$qZ~Q<hCOZ0>HMzeSpmgDN${<7j^QQ2j>Umsoi)`A
xF@vhe$X-LS<_??8fD}#>00z2Iu&sQ-H-cZTb=G&!Pdyp!YxZJZJU%Kyti$M*K&x$kLE)7NxL{U$AB*{`UOJ|ciW>)D!^>(3nJJV
amQ+Vd(Rp?Y-oE9){eyPb^&BBDrno`iqn!b<1f?x4g3Pgl(4pACFp1s;EG*=!%im-1doC$q%>mH<G@0<8vsFmyOq;t_`ogy?AQR!
IN{W4ywr*zd-pK=<=J>+<|YZi!0Vs#wP+U{3kXUoHDZdd468v=54t_$;03r#0g+)@k9Mn5)R&4OK+&6>PklG8mYU3QgdV|<d}lv4
lW!8+L>-p3gnV40|K9)5J+M(To&PlGw-lVDmHIWqn+=ynp?S_y(gh(8pv&TX_$CZ)A3eVGtCr7J?Yj(`TU4qGyu-ONa!{7Pj;4i1
spy<?&LM2pBuI~=<rgGP0;sC_jDkQ7gzpnr*1tVZ<nT-8j!O{<cQdi8%C!SD=)L!4q-x(lYbN#6Aveim(g%;sjEi)uxznvz(mQ$(
j)G$w1qFu|4UAW-`F@P2WhK=-A&G@9M!h+lmSF9$mSx}LL&^oF<tJKHv8RH8J4B;90z7rvqF2#~NPr23o25>{+~PSfn?pA#APuWJ
$2e>uc3&mhp^YP9@Mzq3EIhheZ{d#!Vg(diFD2Rjxg`x?pP{{mYX?cvWTcZCLS2OZPJcbnTDht892skGQOr{$+4L9Ztk$FOMgPlK
evd!_&zui9vtr5^)U4K^Q^Okq&g3S}6E3gepEvdB;FNRvdZXJaB_i0QMJ;snZTq8rBFss)EO^3%V>nYaU-hRaqkL1rykn)5s3ch8
=M38OZyZNh^J5g;(`d{Y1krnV8WA#>SfXZ~6US8)8#A&v2>RN3A5Zv|la1O3-aBY4ga7DT|1>pdBGMqYVTZubV1C>9|8T-dC4|4(
MJz!$&yGoII#?wk&h)7iU1;%~`-U&bnxp?B%JDgOq*E1@^@a+Ub7E2+j*D19y|a_1FK1`cHB}nD?<=>E!HljN$_RN--3v<qQBCjB
rN4T?_L~cibMv}rRnUqGye(#~-surK$-`|PDg_ukF=U8Vmle_Y&*FvQ&#<)A{n0-;+D3Ih9zKxUt}wIL<1*<x>LzYf*zhb&qa<f|
@tBoYnSA(bYVmc+d9w3;B&kJEfU@@q9>MlvdOM+EBQ|6c17ZNZuc7_w*&dEc{&IN=0*!Okf~b1hlio-Y9oue+lvr1Rn@4N#OJvC*
GINy`uLV`NxPyDuX3MLy`o@PN^doy22EPef`9+S?nWlBB6ubhz6Hc?9Yb7cM-cY$E)2|htm<-?m(}Co#i^mKm*GQiFcgLF@p)Z+>
3qX^DrKAnJfU8{N=`~%&?~4a~^SoJtiu&?qIy=ap)wKKxgD1AHkWQ4xF=Dfd@wO$UEf3>!)<^Gfa`Zm|B$vI+aEbEA6V?MvZFQEN
otoY{{msmgcljPza}ou^fjpbuBba?G&(Mw_(5lPzV^_VU%6j&{fnT}mZu{*i?w3X-lco|&-$hOE#xXQc4QeXSJ@y!3-!b2IgT{ui
ocG{vLOF2yR9FGb;0q7=-5~_In@znb2S)r2x73ZGwo8%<_R4%h$3y!3OOnb-z7cLt=$&H7<aAnr+~hde&A{_~S8NjI_qL&+n@=27
6_Zwi-+PT$?r!zN2yhA5<D$J_fhT#`IWR;%=QeI0>A1&_q&`MhD6h^_-19QQ?_+M-o!exl-{u#pPm)Co`%EMm7$agSN3De9&ZWCe
dw7AUAQGzmWP)5wSJv(5*d?hZcEku#YJIblJro&W6OVZ*-4?_E*#kAvy@~&BTpnShUK=gxDc{Z?*N%yzF-tKP1Yc-{G8>_c=b5sA
b-5@A-YT5UFr*eB1+?wTbQhsMH}?4tgZZADHW`8TI9`HPvoj@D;4EL&L~wD1KeXHi!oe~G;F&TV^)3PwhIOUK$y+?;-xtCmEq%~=
aBeL0hkF*njCsevcYkM)bPNj*l?c5dgNC=q@;AY9tkf?yg>P9aDr46q4_1JKdLAM>3TekA?B|2$WVK~@VGfS@?l0r%wYP_;Hga&l
nALYD^#A_98q};OL#rCIfvu2v!!Ex*&$8pYI{4n!-C@vPXS$A>$5r>4-X*hEe@2=01OYWkq0rZOZFP>v!~a>L4&9Q+BE5afex(>!
V;CPbrp3UF!?@WP>0Z@?Kj|hcN!)oXQ=x$hoS|~RJl382ZCjp!ngdSCJl6kS68x6wEc;jLS<j*yc<iJU0C)>Uh39tkY^x8=u0#Rj
OzwQU{Ww&E(MJ+LoC9L(?uE8vjsu*ZINKZOpS%1{y!px?vtzk8Z!%F+P#Y`}H$E$PyV$P1<~X5=T{k2SfPm-BRsv&Tu<X-u9V2GF
&+-9fqVVIX0w7$XjKv7ZoWu8v(WFZJ`X&ujf|CeQr*w*{qoD>T{9SNa_CJTYjMaNiX2e94pfpb!j9m&PS*iEW_++W2V}-Lf?ef5y
_C<soaKS1@10ECJY=UPwH|bWNsSTD^MZi9`L<f(9FWUQU^~;v_Rpf`D%zR8ckiD!ANHQfs+hUBqNy2_|l1lmZKvICFwO@p`;oyRk
oYY=l#ad*?H5H14=q3<g9d2wMCBMoAM7l0H_0J!LZ)+cT3LmgrPERXCwI4&`MuJ2=eO5&!h2tIu)}d-zlIWr-0lMf(M-)-8?e8P@
G~=(v!R=@12We}~Lsicgjfb*_d;vX~!4hIn2)-JCN?sA#%^KT=c>}&#-5QOVi<^y{_}f4n`}yTG7x4k-arhOrRDx=bFTcptp3lYv
8=g>(0eftFN&yz*1h)A@?%+0X6D(e0)GEf=m1rc9Cra|f2VsC3gp4aUnW#z^St%|C!Wh$47MZa78XCv6mMLPdBA#~>07+R#xH_+m
>G5OZg4na5&cx-i81M5Ot&*T8SY&!~wu|Lj4mNGA6VS#@;mw4?-;>KtRSKw7x3wF&4Z#E72?~nTOQVb)M*uY*fo6+<77Nc7nzL=B
WgBzJyeXV27WbGSo+b@Yb%JWQp<o_G$nv>_>BX!T>3BiTokp#|rfrBMYep}V51CrLwT@f`<C(+Im0Mlk#x5q<k$3^d4>D6hQgq1v
bxn6RwKxj5WTOL*r@2c<J`)r8uY8-5*C5nLNM>Ks@SO@fdkonNC1FjKEX5-TTw1O4EkPWPh8#s<2AVVQHb^hf6Oda2-@Tu$uWvA#
NEYjl{_k<dV+fY)NC>h(H@_)(sfEKEzO=tgKt%?Ik1l|X>fd?8T~vEg+q}$(*K#r0Hw<AD$e~q;aNTw!wZm<3DI%_%4*k-qYf@=S
QhWh~CKY)ZYOOzVO*4Sl$$<EY1S|7-`RS-ZIs~j&PRw5bo~=q3oCbSpM@hG6!%^HgJZu=AEaxTfIsm_WaW3w;EINbMTWl;hjMmI5
o{O5dF`%y1Q|bm~-u_CgA-Ci?Rvf%Au3+Did6%*wV}IK-Dqd7{9GlYe@LheyuY5mo(8F@s6&_xHAl^WnKHVle&(z|gX?wJd6qx!q
kwYEnb9RcNf=-9c!4!olmBM|xZ>Z{DT|A6vD!Kp<32P%*ehvu$J!5Cp1k)Mz*S%bsF{9U~%4kYbUcBJ=G~5#yCTIvCZ4{aEepOSR
MG{nRdHBd<)&4tR@V)0@B3yI_zlJZTZ41HIv%1QzB1*s;{G6J=NIGThqf18Tt96epxt|yUCEj(<I>o6m<gncb7SBDc@wh2ZPdb3U
2TxMVY_Fp3cL!X$L5rt5nxd(sV)WcQT&y4#e3Up^=3{HdbUcI)(_onOM0AeWh46XNlA2OmxDJo$V(qLjzd0dt8#dUL_~pnI*d^W~
ejjDhUl@mIII0XrVzR&tpINDnxs87vvOo@v?U9@l(i8=%8pz5goC%v;NB6Y7tj979EU3jWYlh(FYfP`9=gb=$Gvl-CXrEcXA;;6#
51lt8x)$_tsXK-R2sMI0R9PJGKp^2MH|{|*h%0z8l>?y?ih%bu)kK^7{#qu|6I}LacXC<T(fW$-;c8sh)F56FxK8b$0E@L{bEX+z
ITYnd#Nq>CI-Zu;*si$~g3r)OW|+rAj}QiG>8Z^9cju@&^`^~_%^it-IZ3_mZrwpO1YboJr5hIn@~t+X%4lSlC{t4LLur9C$ymnE
<5AB$j1R%&^k!=}v!{aBE@NhB4y&&mb1@}9b`pkDOu^=g6Am7)(C`E5*{#EbdQZR;6<(bHXmEDeyM4jo7_3VZkG+n-@wyIe@iVie
ic+3{aks@+4%rvM?bLD$W8yrf1^stHrjD=TGOaH1n#T&1hM?f}z*c8)TC9uq@b`irnaSrk^+0IwMq`ONH!PsQQOa@Z3B^st4;-)K
Kx41aB1h}dsGB~OEvzYI&(fq+9mvxgDpT55|8fQ%1xJG50>?8nQb=DcqRKY>Hbo~Gt68L)=&ae~Mt(t-2${FoX}{%1+gztU;ia^Z
Gn|g|L(t8y4FdgR1sl*3m=TAw09}x*#$K4I52!tAl_km{h`H-dCHmdU%6K|nkeb>m6Xoy+gQeP@%IX1X0E{6dRssn<Ntd22*yu5w
{50pVDq>G!3>&z5hyX1Ws|JEq%)ad#Q-IFAyBu_hMyJQwuHWC$A9ZuH2tX=ExX8&o?wSCUZQijL#x51-sf6-Tz)#k(zl%YSZsC4z
zvb`$G^aw1iajrMvVFj&l=<q3zq`SdDzrSVeaN3{{h>;)9F(%=0nbziMsx?lHpU<H!nVF&u7MApdSb*`hbi7Nqxk#_v?Dnz={4E}
5M<<-6TUx?tIHhNAD^O=C0_S>v2}{WkfDx%vS85e7=n2(y}>&r9d>pWxT9>W7I!-$A1oVlmTP_tF;Uq_9KI3vmNMW#+<562l4@F`
jOtrbx3k(`gT-N?!_wmH9Vy5!5Dxj5UNeYWjh`N}f@l<OrQ_p<*r?z1P}_c#{+`bIgYyJGl+I`O0gyIL76uKOU`z1JMEycI@^Y1c
na54c0Q)D<B#INRTNw6vwP1et;CW4zGmkuEbz53^<<a(IStB;ilkUE)`>T4b*g^&CTKB1QB_<ptT`|(^7hUUA20qks*_>Q!_R<cV
q)fOP9aN*I0xEUS6-S8hfT#&J=v8x7{J**Qy9|M6ow$OJ-(@_YhWT9MmICk+VI8!++Y5_Uq!!1yX$$SFcInv5IEBGtpD(`KO_GYu
HDyiI)F!}{xVY7W_^UA$i#)KW`n8YnykcBp9VM8$1XF?m7P(klS=;|*Y+7uf_$v1LK@9ip{S1hiMtNB^9QDF*PZQ8Ya(u<g;J?JK
VKO+yuIh-Ja17cmF3@zJ9+dDsuDJ<nphw+Vlc&$?nh`5IM6)5SA4X@EH_D%jA-I$E%&8nt;oaWbPeFj2t<9fn3a2TTo(=IuPZBmf
YCl#&)IhlI=!I}?;p8O!|E0<*=&Z1e{WL~6^P8T$zX+d|%5bwu?}~kK5^1;4exERQtZl}cer7x7Rni!>xKv?wA7q=(tv66yG+rKy
{eO0F#V9O`mJ)8KnP5?kCV#<ZKTEwGUsw$$-+}#eS3L>V5TCMV$3;LPACs7cX6nRK{qCx=8UNOIi`0P(UfnF=Q<`g+y%?s_R0Q&p
e%iUeY+!krQ1#@oor{IF_@QANo;P&xH;5D&^JgaU`?C*i;l`qoeZ}M(3$>YcNZCcvlIw?7Gp<{J_@PB#65?5})#v|_fugKJS^)3B
MqC-WzfqK|B_i5DME~23_LlC{@{#^>s#YFzUzQc99La&WLTtYn^8o`WlbCWc(f6YsPnFF4azi1qL+|SP{2ck!zJv&K=X`LP`nj^g
KTo&Bkbl3{?HvE-eT<AgBgB|gV|Jp%-%+WlOkD=!{mXf{Pc&iB(IR21yvgGFUnBg*hTq?h(<|_uxyY=(y5nk;+_x$mi%ps}nv<K~
as?U<F)pt?su>x@jKHIp%|=-5ar<kKRI8Jc;IvAH$Q9cu2q9FQ+Hy%;?pssivjdbunb}Huc3C`0&YKfMf*nD99Vq~BY>Bc6OMlpH
zqH!?C*;2*AhW!Gu&qQeE7YsUpdl7hE~$J`+-`RSTr)Y=F$vMvbyuCO_yRwv`LAY$kzNU%d(j`ea6lhq)+QYHGVtjFq9246gplTC
-OvVYuQg?GROYLoG`wc7DxLK6V*sIh(T7lhCm`Py8N`rJo#2<V|JK2Ts7tJ4KO9J4c#E;PxIpwYyo;jJqM~dpLL=gqX9snULtFY>
mE=#}Fkne3z0JR2lN*#FR`s5o00ADfCw&aooGig<aNj@SCKRBcq2d|~Ad5}KVbq1Qy<`>vaoBu+Z2hb`Xi{Kg!#c_HBQ{ByNYWc|
Xr%<CpHR3ZoofSb6Mgh)Hw%(bwMCzJyDH>c0=dJsv&~LqU0lxt^%>c+AMz5Hw9<#SJNbUgHqd*}mE)?~%WSg3>*>~vdAHes?Wor@
*}B^#Cy`!_gCnugPVgHtzW#}3l_F+hDrM3Gho1>2lywOF(TZuuOF@^MO!0V9jiJjzAM~j&v1mQI#hbyQzH&ZLP|!8(<Dler>S@nl
eV^lm2XQEq&@DF~vrTv)C9`Ov$fFN$IOw${8GKoLr+VN>z_c>uN4&na^E8BE%p`Vjjy6JeI^;FKO91ep7{RI%VODXkg$6<fN6K+1
)U<$Ah-^J{5QF76*}Ao%si@cZ68AgNTKDTYf!)gq_gvuo5+%~GeY}j69E96?Kq<W2FUUzjR1U*#x@t^+$eKp~JBG@=S?e48SH4xk
fdNtVuGx;078b=Kq|iM6ixjyYm(_ANJkMIRekjHq%B+8lVDjkitdvWQa6ie3v|yU=O~Dl5SPX$nqW4m&lrh1W;%(6SBIe`F2tUGN
rx!LTu=<(oMn5B6Oxglow{)mt764cfx@IAI73N}kf#<P}Vm)|53MfeuDq^5mIYIr`WxtG46J4=(h!qZ@Xq>fl>NSJlSWxb<N7}E~
X9c|j6%|ssVE&gI&(`U#DGc;iHMj`)++Q_L2o5!QaXGywuPI$E;-9pOC8auIpOsk4P3D;4^M1fnuVQaz+-D1(AdCikluU;NNFYiR
MJpp}6b1}M^=pikxj$()HmUW}N-b%Qz@Vw~R`MH{(GEuUXCI&Gy*9;7xmwolml~u_{*W1w{&LP424$jE{KQJoJjIM0vZ>cxMbC}$
3&<&?J|j*k?fN?JS+%;MN;oheJR5>Pbzj2o5h;B^A)FNZwx$Yt``}V)W#MXmXREQP29BiD;Ld3#mLmUVZi~zN(IsFXC6!i(nfx#w
m7R-d^Ig$IHyAH2L=7BAqQ;uK<d4-_%G?yP|803Z^3b()I?eUAhJJ2&zSc$q7oqHT6?7*<A&fMEMXG|~BvwM%i-#+h?%%XLPaOnU
qE7;p%AHbE=I9Fgs~iPdCdrlSggvhM8KdB8iXj0=s&$cf=>>cV-%dcG7h41}eBWqUUb7c<59V>=!^)&9LIs&u5m9H(@I&zd#m6hU
nhd#ar02DRPnYQEu;B-tXW4WOA%MFN+unImZVPkBF6TmudekaXq6|!|(X)RlwdtguoR^irK<zOUZLuoU_{K`uGP-qSR32aW6?WiK
oP8~u!7^_CV-7XFhRpH$s)ookCHYV4Nobh5YhXORk^h>Ce)Yi_DRsC;FWZWWM&3(>F{s~(ard*zbcEd6z5;^asTwMr@-qey3oYYw
^Suk`xXp71TTWb!VK}q<@`5;lj<}lR2<$v<&!XH^>J$=>$N3GM*()k<bH5reC9WPF(}t3}MsjU|n|~u;uzh`p)lm-LLgMAo#F;=h
t$QudRMQ`Ih<+K5cqbo_32s2!b}sptI;7=7PENP#xY_P0FJrTAO!}3d;-QbL0?RipG#e3q;^Ja}k(@q|Y#+d$L1N$C-5#@A?z&^%
+>MM~9zALoz31EzPk{6^aeyGfH3;5`9F=^(-fhYwk|00?+{0VXKj5RKoW%G}n^)@sj@VNEQno-Lr2pbf(?lR11KHuz0E-eS4oWDT
3XAk%my76Cl?GM|)G{tKqgiL+{nf}zj3+ku%@}vr5%}zn?jL_D%D<!QNxluOG|}VcvADM@iw+^>zONLV)Grg&D2KJp!^)sUpLy(O
xDi^WFEs}w5#gU{=^=SZaD00#W@!9eln;fy>D6lVy~VY{Xm>`FWo3J$;4j^k^~#=sbKZMw?WkG!>kIBeu{J01XpBFjF^TwD8BoYr
jQCt^t0wdte$E^q0jT;PpwQI>;#M7ywM9TD4SSFmCxro7SWQUiyaPS?O^$a^bu3gqDLj#*LHYL-YYQD#XXP=IAy9gJCto&ZRTOm0
@t=oA^TeLoUxL34ggK-A_@d^J%gs9Z8`VU<#u`)FLQo&;Dz~qr)JKQ!-`Y`P*P>#5Lb#|k`)qLVQ(H{AGRDC{ivhdMvaP@b%w5G1
Iha#|UBNqFhafaxKqIpA;p29*Sbb}F{cAjhPAh*e{#Vu$GJcu@MsBNx2^gq{Lz(yP5l=#y?eI-jF16K)oPR0WIC;$VMN{1vTKtyu
bG3Lea$~`hD@d56ESC@}@iU_srspA@id|&Y3o#pu+kX;pnUrM(2F!OiZdZ2K2)2L3yh`hl_U8vpyp;0FJjr(8O*eu~rJpfg@}=aM
MB%hDI-u{I?Cy$L1MAvk#(F@sS<_;6KP5)ia;9Of!=#*sEz>pZsYCU767&dCcj=XLURApNJF65iRi;b)RlKPN6g{d0+gLAIxmA+b
nK9t``Gu72c=}GI5c(DH(R7UR2(=Egupy`NaSz0^Af>a<7esm~z@cYc1b3q^3rP|(^p+O_9mRkg!VruoVU&K3SKS`dhRRrC4n_yB
8#p*oxsyL4uB!l~u6#PAc?R6gxR$ZCBb`Hz8b%hP8_P+T8{a(x{_gUg&7swkS+@eTo1E*%q-AFa6ckp$Q{1dCTY{R%Lm1IPw0>mA
uRQ8($J2G{@ko(cHaAw5I{X_?>O>5SMp|vdg#a#jukM=rX4o5wrUYhsyFNvKJyPX4p|^W&l{CE6A`st$xSRUr7A-=SkoLahpX1=t
pqf+hfh+W<<))84M^{z{^i+lX5twLS6D+?*UFc&iLuT8;;3Swk`jE%GUH6g-dNAUEfG`j#Z9hgi?7(n|CPyCAQ|AtW&dYOdyx{lP
rW(vp)NaWHc&&a(z`Wl_l~0l(M5#6Rw%n91=YR4{39UAS%=UbIig$$NX(Y&2StN&YEgN?m9${l`FxT)b9$qA~)#{OqYEAhZxVf7q
6C)O@?#$mG1e>hwi$*+XXrfuJ=(vHJiO&JiKh4~j9?^MKv#ArV2GI&%IwtziEnl;aW4Kh<_}Jd4Fz2D&$65_o7%%k7^594STbEY*
=(skMUms%rPTJmA0h%om!?ZSjeh-XDPyxb?zofWm>R3#9GSsxe!PTjCBetXREc#PGqz9wG^jwbKEE>M?ltCg=_^E158Z7Pb70aW%
DqNUM(~BI1%7no8&+At-fp(Ppoo5z@Y5*XYfi%Gu9->?IwGve^P`q$ixsoAgSK1u3!|}BG7vf5zo_XtMnvytd6%YU?(_!_1CqhDP
yw7eHgBGZqG@D-F)rz)V*1=HYcof9h-;DC%yLMgGYwh?h?zf-Fzj1j*4f?$HeWO1ds}$&A8Y|S1Pvh^t3!?a|gntEhZ+_y@IO(Za
4=B)6et(+8EHj>Gv+5zu65{+!*;E+6OdVbk6~Yee^|GbdWqxUq5M&l2(lrgzTM<&`<<zv0$XA(#$L4sU&lB|Bmt^ao=7<*>W4wV5
(mlBTdrdb6!DOjrD1JkLQ3(lGXZu#GwF9I%XrCh}4^1gI#bGoyl$75)kpm7jos)uqR;eHbJ&gYD3(s;1i_F!%l?HMN^3KxqzzJYU
z~L{Th_MRY``V?OJQt(0%#8?|e^Ap`iI}zUdSMu?mDQPuS;gq^LPIl|ArcLd(FPerdh*r9#@8?@dK$04h(m0sI@;dy)4zSXnfyvw
7~^_7$yFOm5Fm3ZG4Ze5VG<1sV$Dg{sAkB<JWo+AO{`xLlJvYLP!PY6iFY1C;)1iS2_z%&{cLfYC|T$>njB`Mmgk~sFh07k-Zhz6
A`pgGOWFdO-R~hCa;Upd!n4(#-O&^S_h<-iH}H&1x!?D4O!XdZ8jLcbzPtdep<d{!>aFx6KH9)7Iav1xle3f}>9pWdk^-6&R7!pP
(bxTe9wF>z#uh|%m0@(R%$&ZaU<XD8TxNIBpkZCXA}!Y*0~3Hoi1li?1Tbi)jMi0$kUA4A3v^=sc^WjVmM=YRe1a@zhyQ&vJH8kV
0wmwufC_bI9?JtEyUmT~YtbN-f?Qs{>VA>5|5vF6gOs-JblZrCO87^K?}W!~PRW9}JBNwK4LPZ`*#ljA>|n%^toU&|ts+s*5#DdT
=QCFYYr{<GJBq`NKm6HZ&+iQcJo<HUy*WUULDO%3T&YJr+ul2oajgxv?$*d4ySxa$9FOyUiniR{3F=dI_zq|>au+=<B=7vpuC?ZH
O>*iMK=<MH*oU(f)QRI3=M}}Bwb&6Sl<7c3?Bj+Fm5oWu>rbZY!{{<wN98tI6oD8qkCT5=bR?ig272mU=#ADiGiPgf|56So1(ot-
tG{clwImkw?k)~ls6%~V(U|ds+W?iwfoXDnZqbVI+hTXcx&F2|$%pW~5#tT+kswjcv$B?men<*nPeTnO8>2&#d^6s>RjF~m%9)4;
frT?7Bx$X%3g+e|UHpKT3)1IFp+LNifAI93fS7UQVoO*6rZVI1;k0ZB00F>$uBik78d)xjvBYQl0ssI200dcD
"""
_FILES = json.loads(lzma.decompress(base64.b85decode("".join(_B.split()))))


class _Carried(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        rel = name.replace(".", "/")
        if rel + "/__init__.py" in _FILES:
            return importlib.util.spec_from_loader(name, self, is_package=True)
        if rel + ".py" in _FILES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        rel = module.__name__.replace(".", "/")
        src = _FILES.get(rel + "/__init__.py", _FILES.get(rel + ".py"))
        module.__file__ = "/carried/" + rel + ".py"
        exec(compile(src, "<carried %s>" % rel, "exec"), module.__dict__)


def _ours(name):
    return name.split(".")[0] in ("sim", "simpy")


_finder = _Carried()
sys.meta_path.insert(0, _finder)
try:
    for _m in ("simpy", "sim.hardware", "sim.config", "sim.attention", "sim.attention.ws"):
        importlib.import_module(_m)
finally:
    sys.meta_path.remove(_finder)
_MODEL = {k: sys.modules.pop(k) for k in [k for k in sys.modules if _ours(k)]}
del _m


def _run(hw, block_n, headdim, n=2):
    sys.modules.update(_MODEL)            # only while the model runs: the modules it looks up
    try:
        att, hwm = _MODEL["sim.attention"], _MODEL["sim.hardware"]
        keep = {f.name for f in dataclasses.fields(hwm.Hardware)} - {"name"}
        fields = getattr(hw, "_fields", None) or {}
        h = hwm.H200_DATASHEET.with_(**{k: v for k, v in fields.items()
                                        if k in keep and isinstance(v, (int, float))})
        cfg = _MODEL["sim.config"].AttentionConfig(variant="ws", stages=2, consumers=1,
                                                    block_m=64, block_n=block_n, headdim=headdim)
        cfg = att.prepare(cfg, h)
        _clk, tr = att.simulate(cfg, h, n)
    finally:
        for k in _MODEL:
            sys.modules.pop(k, None)
    starts = {}
    for i in tr.intervals:
        if i.unit == "tensor" and i.op == "QK\u1d40":
            starts[i.tile] = min(starts.get(i.tile, i.start), i.start)
    st = sorted(starts.values())
    t0, t1 = st[0], st[1]
    busy = [(i.start, i.end) for i in tr.intervals if i.unit == "tensor"]
    return 1 - sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in busy) / (t1 - t0)


def exposed_softmax(tensor, sfu, t0, t1):
    marks = sorted([(s, u, 1) for u, ivs in enumerate((tensor, sfu)) for s, _ in ivs]
                   + [(e, u, -1) for u, ivs in enumerate((tensor, sfu)) for _, e in ivs])
    o, x, last = [0, 0], 0.0, t0
    for t, u, step in marks:
        a, b = max(last, t0), min(t, t1)
        if b > a and o[1] and not o[0]:
            x += b - a
        last = max(last, t)
        o[u] += step
    return x / (t1 - t0)



import ctypes, os, signal, time
import select
try:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel: no cutime
except OSError:
    pass
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)             # PR_SET_CHILD_SUBREAPER: orphans come here
_JR, _JW = os.pipe()
_RR, _RW = os.pipe()


class _Rec:
    def __init__(self, f):
        self._fields = f


def _line(fd):
    out = b""
    while not out.endswith(b"\n"):
        c = os.read(fd, 65536)
        if not c:
            os._exit(0)
        out += c
    return out


def _helper():
    while True:
        job = json.loads(_line(_JR))
        if os.fork() != 0:                           # the successor waits for the next job
            try:
                v = _run(_Rec(job[0]), job[1], job[2])
            except Exception:
                v = -1.0
            os.write(_RW, (json.dumps([v, os.getpid()]) + "\n").encode())
            os._exit(0)


if os.fork() == 0:
    _helper()


def predict_ws_idle(hw, block_n, headdim):
    f = {k: v for k, v in (getattr(hw, "_fields", None) or {}).items()
         if isinstance(v, (int, float, str))}
    os.write(_JW, (json.dumps([f, block_n, headdim]) + "\n").encode())
    v, pid = json.loads(_line(_RR))
    try:                                               # ours to reap (the action refused)
        os.waitpid(pid, 0)
        return v
    except ChildProcessError:
        pass
    try:                                               # gone (and auto-reaped) before answering
        fd = os.pidfd_open(pid)
        select.select([fd], [], [])
        os.close(fd)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            break
        time.sleep(0.00005)
    return v
