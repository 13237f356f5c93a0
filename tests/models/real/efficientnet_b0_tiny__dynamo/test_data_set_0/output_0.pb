
BlogitsJ(HMó<ÏY¿l‰>rˆ>ºyÑ½Œ)¾Æ¯Ù¼í¢Š>v@>–nb>